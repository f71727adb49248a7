"""The advisor tests' environment: a tmp simulator state file and a tmp XDG state dir.

Also the sweep on the simulator the accuracy and MIG tests share, the host app the advisor
screen tests drive, and an advisor run in a subprocess that the signal tests interrupt.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from textual.app import App
from textual.widgets import Static

from gputop.advisor.journal import LimitGuard
from gputop.advisor.recommend import SweepConfig, make_plan
from gputop.advisor.sweep import Sweep
from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.tui.screens.advisor import AdvisorScreen
from tests.support.paths import ROOT


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
    """Return a fresh environment: no simulator state, no journal, a folder of the test's own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("GPUTOP_SIM_STATE", raising=False)
    monkeypatch.delenv("GPUTOP_SIM_NO_PERMISSION", raising=False)
    return AdviseEnv(tmp_path)


@pytest.fixture(name="adv")
def adv_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AdviseEnv:
    """Give the test its own advisor environment (the advisor folders' conftests import it)."""
    return make_env(tmp_path, monkeypatch)


def state_sim(adv: AdviseEnv, **options) -> SimBackend:
    """Open a simulator that keeps its power limits in ``adv``'s state file."""
    backend = SimBackend(BackendOptions(sim_state=str(adv.state), **options))
    backend.open()
    return backend


def dead_pid() -> int:
    """Return the PID of a process that has exited (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


TOLERANCE_PP = 2.0


def sweep(adv, scenario: str, seed: int = 0, devices=None, **config):
    backend = SimBackend(BackendOptions(scenario=scenario, seed=seed, sim_speed=2000,
                                        sim_state=str(adv.state)))
    backend.open()
    plan = make_plan(list(backend.sample(devices).devices), SweepConfig(**config))
    guard = LimitGuard(backend, plan.devices)
    guard.begin(plan.originals)
    try:
        return Sweep(backend, plan, guard).run(), backend
    finally:
        guard.finish()


class Host(App):
    def __init__(self, backend, sampler, **kw) -> None:
        super().__init__()
        self.backend = backend
        self.sampler = sampler
        self.kw = kw

    def on_mount(self) -> None:
        self.push_screen(AdvisorScreen(backend=self.backend, sampler=self.sampler, **self.kw))


def open_sim(adv, scenario="training", speed=500.0):
    backend = SimBackend(BackendOptions(scenario=scenario, sim_speed=speed,
                                        sim_state=str(adv.state)))
    backend.open()
    return backend


def text_of(screen, selector) -> str:
    return str(screen.query_one(selector, Static).render())


class Running:
    """The advisor in a subprocess, with its progress lines (stderr) readable as they come."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)
        self.lines.put("")

    def wait_for(self, text: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if line == "":
                raise AssertionError(f"advisor ended before {text!r}: {''.join(self.seen)}")
            self.seen.append(line)
            if text in line:
                return
        self.proc.kill()
        raise AssertionError(f"no {text!r} within {timeout} s: {''.join(self.seen)}")

    def finish(self, timeout: float = 30.0) -> tuple[int, str]:
        rc = self.proc.wait(timeout)
        rest = []
        while True:
            line = self.lines.get(timeout=timeout)
            if line == "":
                break
            rest.append(line)
        return rc, "".join(self.seen + rest)
