"""The report's Prometheus source against servers that are not a working Prometheus: nothing
listening, a web page where the API answer belongs, a server that never answers. Each is one
line of the cluster source's error kinds, in time."""

from __future__ import annotations

import time

import pytest

from gputop.cluster.prometheus import PrometheusError, PrometheusTimeout
from gputop.report.prometheus import fetch_records
from tests.support import hostile_http
from tests.support.hostile_http import serve_fixture  # noqa: F401 - `serve`
from tests.support.ssh_harness import free_port


def one_line(exc: BaseException) -> str:
    message = str(exc)
    assert message.isprintable() and len(message) < 200, message
    return message


def test_nothing_listening_is_unreachable():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(PrometheusError) as caught:
        fetch_records(url, 0.0, 60.0, timeout=5.0)
    assert one_line(caught.value).startswith(f"Prometheus unreachable at {url}: ")


def test_a_web_page_is_not_an_answer(serve):
    server = serve(hostile_http.html)
    with pytest.raises(PrometheusError) as caught:
        fetch_records(server.url, 0.0, 60.0, timeout=5.0)
    assert "something not JSON (text/html)" in one_line(caught.value)


def test_a_server_that_never_answers_is_a_timeout_by_the_deadline(serve):
    server = serve(hostile_http.silent)
    began = time.monotonic()
    with pytest.raises(PrometheusTimeout) as caught:
        fetch_records(server.url, 0.0, 60.0, timeout=0.5)
    assert time.monotonic() - began < 2.0
    assert one_line(caught.value) == f"Prometheus at {server.url} did not answer within 0.5 s"
