"""What a new user hit in the first hour (issue 14) that `gputop` shows before the dashboard opens:
an unknown scenario, and a theme with a TOML syntax error, each one line and exit 2."""

from __future__ import annotations

import subprocess
import sys


def test_an_unknown_scenario_is_a_usage_error():
    out = subprocess.run([sys.executable, "-m", "gputop", "--backend", "sim", "--scenario",
                          "nope", "snapshot"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.startswith("gputop: unknown scenario 'nope'")


def test_a_theme_with_a_toml_syntax_error_names_it(tmp_path, monkeypatch):
    folder = tmp_path / "cfg" / "gputop" / "themes"
    folder.mkdir(parents=True)
    (folder / "bad.toml").write_text('name = "bad"\n[colors\nprimary = "#ffffff"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "gputop", "--backend", "sim", "--theme", "bad"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 2
    assert "bad.toml: not valid TOML" in out.stderr and "unknown theme" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


