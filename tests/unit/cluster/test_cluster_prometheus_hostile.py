"""`gputop cluster --prometheus` against hostile servers started here on 127.0.0.1: whatever the
server does (trickle a byte a second, send without end, send 60 MiB, nest JSON 100 000 deep,
send HTML, never answer), `--once --timeout N` ends within about N s with one line naming the
server and the problem and exit 1, in bounded memory; the live view quits on `q` at once."""

from __future__ import annotations

import threading
import time

import pytest

from gputop.cluster.prometheus import (
    PrometheusCluster,
    PrometheusError,
    PrometheusTimeout,
    http_query,
    parse_vector,
)
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


def test_stop_returns_at_once_with_a_query_in_flight():
    forever = threading.Event()

    def stuck(url: str, promql: str, timeout: float) -> list[dict]:
        forever.wait(30)
        return []

    cluster = PrometheusCluster("http://x", query=stuck)
    cluster.start()
    time.sleep(0.2)  # the queries are out
    started = time.monotonic()
    cluster.stop()
    assert time.monotonic() - started < 0.2
    assert all(t.daemon for t in threading.enumerate() if t.name.startswith("gputop-promql"))
    forever.set()


def test_once_gives_up_with_its_problem_when_no_try_fits_before_its_deadline():
    def refused(url: str, promql: str, timeout: float) -> list[dict]:
        raise PrometheusError("Prometheus unreachable at http://x: Connection refused")

    cluster = PrometheusCluster("http://x", query=refused, once=True, refresh_timeout=2.5)
    started = time.monotonic()
    cluster.start()
    try:
        assert cluster.wait(cluster.settled, 10)
        # tries at 0 and 1 s; the next would be at 3 s, past the deadline: given up at 1 s
        assert time.monotonic() - started < 2.0
        assert cluster.problem == "Prometheus unreachable at http://x: Connection refused"
    finally:
        cluster.stop()


def test_a_refresh_past_its_deadline_says_so_in_one_line():
    def slow(url: str, promql: str, timeout: float) -> list[dict]:
        time.sleep(min(timeout, 0.3))
        raise PrometheusTimeout("cut short")

    cluster = PrometheusCluster("http://x", query=slow, refresh_timeout=0.3)
    started = time.monotonic()
    try:
        assert not cluster.refresh()
        assert time.monotonic() - started < 0.3 + 1.5
        assert cluster.problem == "Prometheus at http://x did not answer within 0.3 s"
    finally:
        cluster.stop()


def test_no_scrape_target_is_a_problem_not_silence():
    cluster = PrometheusCluster("http://x", '{job="none"}', query=lambda *a: [])
    assert cluster.refresh()
    assert cluster.statuses() == []
    assert cluster.problem == 'Prometheus at http://x has no scrape target matching {job="none"}'


@pytest.mark.parametrize("body, needle", [
    (b"\xff\xfe{}", "not UTF-8 text (byte 0xff at offset 0)"),
    (b"[" * 100_000 + b"]" * 100_000, "JSON nested too deeply to parse"),
    (b'{"status":"error","error":"bad\\n\\u001b[2Jquery"}', "refused up: bad ^[[2Jquery"),
    (b'{"status":"success","data":{"resultType":"vector","result":'
     b'[{"metric":{"instance":["a"]},"value":[1,"1"]}]}}', "a malformed series"),
    (b'{"status":"success","data":{"resultType":"vector","result":'
     b'[{"metric":{},"value":[1,1]}]}}', "a malformed value"),
])
def test_a_hostile_answer_is_one_line(body: bytes, needle: str):
    with pytest.raises(PrometheusError) as caught:
        parse_vector(body, "up")
    message = str(caught.value)
    assert needle in message and message.isprintable(), message
