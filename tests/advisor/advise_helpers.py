"""The advisor tests' environment: a tmp simulator state file and a tmp XDG state dir.

Not a conftest.py: tests/conftest.py is imported as `conftest` by other tests, and a second
conftest module on sys.path would shadow it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class AdviseEnv:
    def __init__(self, tmp: Path) -> None:
        self.state = tmp / "sim-state.json"
        self.xdg = tmp / "xdg"
        self.env = dict(os.environ)
        self.env.pop("GPUTOP_SIM_STATE", None)
        self.env.pop("GPUTOP_SIM_NO_PERMISSION", None)
        self.env["XDG_STATE_HOME"] = str(self.xdg)
        self.env["PYTHONPATH"] = str(ROOT)

    def argv(self, *args: str, scenario: str = "training") -> list[str]:
        return [sys.executable, "-m", "gputop", "advise", "--backend", "sim",
                "--scenario", scenario, "--sim-state", str(self.state), *args]

    def run(self, *args: str, scenario: str = "training", env: dict | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(*args, scenario=scenario), capture_output=True, text=True,
                              cwd=ROOT, env=env or self.env, timeout=timeout)

    def limits(self, scenario: str = "training") -> list[float]:
        """The limits as a new process reads them back (`gputop snapshot --json`)."""
        out = subprocess.run(
            [sys.executable, "-m", "gputop", "snapshot", "--json", "--backend", "sim",
             "--scenario", scenario, "--sim-state", str(self.state)],
            capture_output=True, text=True, cwd=ROOT, env=self.env, timeout=30, check=True)
        return [d["power_limit_w"] for d in json.loads(out.stdout)["devices"]]

    def state_limits(self) -> list[float]:
        """What the state file holds right now (no process of ours involved)."""
        if not self.state.exists():
            return []
        return sorted(json.loads(self.state.read_text())["power_limits"].values())

    def journals(self) -> list[Path]:
        folder = self.xdg / "gputop"
        return sorted(folder.glob("power-limits-*.json")) if folder.exists() else []


def make_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AdviseEnv:
    """Each test module wraps this in its own `adv` fixture."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("GPUTOP_SIM_STATE", raising=False)
    monkeypatch.delenv("GPUTOP_SIM_NO_PERMISSION", raising=False)
    return AdviseEnv(tmp_path)
