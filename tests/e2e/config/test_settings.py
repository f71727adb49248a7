"""The settings file as gputop, run as a process, meets it: a bad value or an unknown theme stops
the dashboard with one line and exit 2, and `snapshot` prints the same whatever the file says."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.settings_file import config_home_fixture, write_settings  # noqa: F401


def run_gputop(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gputop", *argv], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env={**os.environ, **env})


def test_a_bad_file_stops_the_dashboard_with_one_line_and_exit_2(config_home):
    path = write_settings(config_home, 'interval = "fast"\n')
    r = run_gputop("--backend", "sim", env={})
    assert r.returncode == 2
    assert r.stderr == (f'gputop: {path}: interval: must be a number from 0.05 to 86400 s '
                        '(got "fast")\n')


def test_an_unknown_theme_in_the_file_names_the_file_and_the_key(config_home):
    path = write_settings(config_home, 'theme = "neon"\n')
    r = run_gputop("--backend", "sim", env={})
    assert r.returncode == 2
    assert r.stderr.startswith(f"gputop: {path}: theme: unknown theme 'neon' (available: dark,")
    assert len(r.stderr.splitlines()) == 1


def test_snapshot_prints_the_same_whatever_the_file_says(config_home):
    argv = ("snapshot", "--json", "--backend", "sim", "--seed", "3")
    before = run_gputop(*argv, env={})
    write_settings(config_home, 'interval = "fast"\n')  # would stop the dashboard
    after = run_gputop(*argv, env={})
    assert before.returncode == after.returncode == 0, after.stderr

    def without_clock(text: str) -> str:
        return re.sub(r"\"(time|started|first_seen|last_seen)\":[0-9.]+", "", text)

    assert without_clock(after.stdout) == without_clock(before.stdout)
