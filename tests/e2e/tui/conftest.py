"""Fixtures the dashboard tests with real processes and terminals share: clock text in UTC and
none of the developer's themes (autouse), a tmux pane, and a real process to signal."""

import subprocess
import sys

import pytest

from tests.support.procs import child_fixture  # noqa: F401 - the fixture, by name
from tests.support.tmux import Pane
from tests.support.tui import no_user_themes_fixture, utc_fixture  # noqa: F401 - autouse


@pytest.fixture
def pane(tmp_path):
    if subprocess.run(["which", "tmux"], capture_output=True).returncode != 0:
        pytest.fail("tmux is needed (scripts/install-test-deps.sh installs it)")
    panes = []

    def start(*args: str, env: dict[str, str] | None = None, size=(100, 30)) -> Pane:
        env = {"TERM": "xterm-256color", "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
               "XDG_STATE_HOME": str(tmp_path / "state"), **(env or {})}
        p = Pane(tmp_path, " ".join([sys.executable, "-m", "gputop", "--backend", "sim",
                                     *args]), env, size)
        panes.append(p)
        return p

    yield start
    for p in panes:
        p.close()

