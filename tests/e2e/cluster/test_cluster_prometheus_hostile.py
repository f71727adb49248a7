"""`gputop cluster --prometheus` against hostile servers started here on 127.0.0.1: whatever the
server does (trickle a byte a second, send without end, send 60 MiB, nest JSON 100 000 deep,
send HTML, never answer), `--once --timeout N` ends within about N s with one line naming the
server and the problem and exit 1, in bounded memory; the live view quits on `q` at once."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from tests.support import hostile_http
from tests.support.hostile_http import HostileServer, serve_fixture  # noqa: F401 - `serve`
from tests.support.peak_rss import peak_run

ONCE_TIMEOUT_S = 2
# What an interpreter's start and the parse of the options take on a loaded 2-core machine.


def once(url: str) -> tuple[int, int, str, float]:
    started = time.monotonic()
    code, peak, stderr = peak_run("cluster", "--prometheus", url, "--once",
                                  "--timeout", str(ONCE_TIMEOUT_S), timeout=60)
    return code, peak, stderr, time.monotonic() - started


def test_the_live_view_quits_at_once_while_the_server_never_answers(serve, tmp_path):
    if subprocess.run(["which", "tmux"], capture_output=True).returncode != 0:
        pytest.fail("tmux is needed (scripts/install-test-deps.sh installs it)")
    from tests.support.tmux import Pane

    server = serve(hostile_http.silent)
    pane = Pane(tmp_path, f"{sys.executable} -m gputop cluster --prometheus {server.url}",
                {"TERM": "xterm-256color", "XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    gputop = None
    try:
        pane.wait_for("HOST")
        gputop = psutil.Process(pane.gputop_pid())
        time.sleep(0.5)  # the queries are out, waiting on the server
        pane.tmux("send-keys", "-t", "t", "q")
        assert pane.exit_status(timeout=1.0) == 0
    finally:
        if gputop is not None and gputop.is_running():
            gputop.kill()  # by its PID: it must not outlive the test
        pane.close()
