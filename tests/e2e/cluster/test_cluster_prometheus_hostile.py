"""`gputop cluster --prometheus` against hostile servers started here on 127.0.0.1: whatever the
server does (trickle a byte a second, send without end, send 60 MiB, nest JSON 100 000 deep,
send HTML, never answer), `--once --timeout N` ends within about N s with one line naming the
server and the problem and exit 1, in bounded memory; the live view quits on `q` at once."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import psutil
import pytest

from gputop.cluster.prometheus import PrometheusError, PrometheusTimeout, http_query
from tests.support import hostile_http
from tests.support.hostile_http import HostileServer, serve_fixture  # noqa: F401 - `serve`
from tests.support.peak_rss import peak_run

ONCE_TIMEOUT_S = 2
# What an interpreter's start and the parse of the options take on a loaded 2-core machine.
START_S = 4.0
MAX_PEAK_KIB = 200 << 10  # four reads of at most 16 MiB in flight, and Python itself


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


@pytest.mark.parametrize("behaviour, problem", [
    (hostile_http.trickle, f"did not answer within {ONCE_TIMEOUT_S} s"),
    (hostile_http.silent, f"did not answer within {ONCE_TIMEOUT_S} s"),
    (hostile_http.endless, "with more than 16 MiB: stopped reading it"),
    (hostile_http.sixty_mib, "with more than 16 MiB: stopped reading it"),
    (hostile_http.deep, "with JSON nested too deeply to parse"),
    (hostile_http.html, "with something not JSON (text/html): Expecting value"),
], ids=["trickle", "silent", "endless", "60MiB", "deep", "html"])
def test_once_ends_in_time_with_one_line_naming_the_server(serve, behaviour, problem):
    server = serve(behaviour)
    code, peak_kib, stderr, took = once(server.url)
    assert code == 1, stderr
    [line] = stderr.splitlines()
    assert line.startswith(f"gputop cluster: Prometheus at {server.url} ") and problem in line
    assert took < ONCE_TIMEOUT_S + START_S, took
    assert peak_kib < MAX_PEAK_KIB, f"peak RSS {peak_kib >> 10} MiB"


def test_a_trickling_server_cannot_stretch_a_request_past_its_timeout(serve):
    server = serve(hostile_http.trickle)
    failed: list[BaseException] = []

    def ask() -> None:
        try:
            http_query(server.url, "up", 1.5)
        except PrometheusError as exc:
            failed.append(exc)

    started = time.monotonic()
    thread = threading.Thread(target=ask, daemon=True)  # a hang fails the test, not the run
    thread.start()
    thread.join(6)
    assert not thread.is_alive(), "the request outlived its timeout"
    assert 1.4 < time.monotonic() - started < 3.0
    assert isinstance(failed[0], PrometheusTimeout)
    assert str(failed[0]) == f"Prometheus at {server.url} did not answer up within 1.5 s"


