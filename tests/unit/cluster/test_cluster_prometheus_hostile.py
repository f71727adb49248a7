"""`gputop cluster --prometheus` with a hostile or stuck query function in place of a server: a
stop returns at once, `--once` gives up with its problem before its deadline, a late refresh
says so in one line, and a hostile answer is one line, never a traceback."""

from __future__ import annotations

import threading
import time

import pytest

from gputop.cluster.prometheus import (
    PrometheusCluster,
    PrometheusError,
    PrometheusTimeout,
    parse_vector,
)


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
