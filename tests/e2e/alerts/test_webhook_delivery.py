"""Webhooks delivered to a real HTTP server on 127.0.0.1 (http.server on a thread of the test):
one that answers, one that answers after the timeout, one that fails and recovers, one that
accepts and never answers. Throughout, submit() returns long before any post could time out,
alerts submitted after an outage are delivered, and no message shows the URL's secret path.
(How fast a submit is, without a network, is test_dispatch's measure.)"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from gputop.alerts.notify import payloads
from gputop.alerts.notify.dispatch import Channel, DeliveryEvent, DeliveryPolicy, Dispatcher
from gputop.alerts.notify.webhook import WebhookNotifier
from tests.support.notify import SECRET_PATH, make_alert
from tests.support.webhook_receiver import Receiver

# A submit() that waited on the network would take at least the shortest timeout here (0.25 s).
# The margin below it is for the GIL: with the receivers' and lanes' threads runnable on a busy
# 2-core CI machine, a 5 ms limit failed at 14.6 ms on a submit that never touched the network.
SUBMIT_LIMIT_S = 0.1


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    """The receiver is on 127.0.0.1: a proxy the test machine sets must not carry the posts."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                 "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def events() -> list[DeliveryEvent]:
    return []


@pytest.fixture
def dispatch(events):
    made: list[Dispatcher] = []

    def start(*channels: Channel) -> Dispatcher:
        d = Dispatcher(channels, events.append)
        made.append(d)
        return d

    yield start
    for d in made:
        d.close(1.0)  # False where a silent receiver's attempt is still in flight


def hook(receiver: Receiver, name: str = "ops", **kw) -> Channel:
    notifier = WebhookNotifier(name, receiver.url, headers={"Authorization": "Bearer SECRETAUTH"})
    return Channel(notifier, DeliveryPolicy(**kw), notifier.describe())


def timed_submit(d: Dispatcher, alert, spent: list[float]) -> None:
    began = time.perf_counter()
    d.submit(alert)
    spent.append(time.perf_counter() - began)


def wait_for(check, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def assert_no_secret(d: Dispatcher, events: list[DeliveryEvent]) -> None:
    texts = [e.message for e in events] + [repr(s) for s in d.status()]
    for text in texts:
        assert "SECRET" not in text, text
    assert any("http://127.0.0.1:" in t and "/…" in t for t in texts)


def test_a_webhook_posts_the_generic_json_with_its_headers(receiver, dispatch, events):
    d = dispatch(hook(receiver))
    alert = make_alert()
    d.submit(alert)
    wait_for(lambda: receiver.keys())
    ((path, headers, body),) = receiver.requests
    assert path == SECRET_PATH + "?sig=SECRETSIG"
    assert body == json.loads(payloads.body("generic", alert))
    assert headers["Content-Type"] == "application/json; charset=utf-8"
    assert headers["Authorization"] == "Bearer SECRETAUTH"
    assert headers["User-Agent"].startswith("gputop/")
    assert [e.kind for e in events] == ["delivered"]
    assert_no_secret(d, events)


def test_an_answer_after_the_timeout_is_retried_and_later_alerts_still_arrive(
        receiver, dispatch, events):
    receiver.mode, receiver.delay = "slow", 1.0
    d = dispatch(hook(receiver, timeout_s=0.3, retries=2, backoff_s=0.01))
    spent: list[float] = []
    timed_submit(d, make_alert(0), spent)
    wait_for(lambda: receiver.requests)  # the first attempt is in, and will time out
    receiver.mode = "ok"
    for n in (1, 2):
        timed_submit(d, make_alert(n), spent)
    wait_for(lambda: d.status()[0].delivered == 3)
    assert max(spent) < SUBMIT_LIMIT_S, spent
    keys = receiver.keys()
    assert keys[0] == keys[1] == make_alert(0).key  # at least once: the slow one, then its retry
    assert keys[2:] == [make_alert(1).key, make_alert(2).key]
    retry = next(e for e in events if e.kind == "retry")
    assert "attempt 1 of 3 failed: no answer within" in retry.message
    assert_no_secret(d, events)


def test_a_failing_receiver_is_retried_given_up_and_recovers(receiver, dispatch, events):
    receiver.mode, receiver.fails = "fail", 3
    d = dispatch(hook(receiver, retries=1, backoff_s=0.01))
    spent: list[float] = []
    for n in range(3):
        timed_submit(d, make_alert(n), spent)
    wait_for(lambda: d.status()[0].delivered == 2)
    assert max(spent) < SUBMIT_LIMIT_S, spent
    # 0: 500, 500 -> given up; 1: 500, then delivered; 2: delivered
    assert receiver.keys() == [make_alert(n).key for n in (0, 0, 1, 1, 2)]
    (status,) = d.status()
    assert (status.gave_up, status.failed_attempts, status.delivered) == (1, 3, 2)
    assert status.last_error == "HTTP 500: boom"
    assert_no_secret(d, events)


def test_a_receiver_that_never_answers_delays_no_other_channel_and_loses_nothing_after(
        receiver, dispatch, events):
    other = Receiver()
    try:
        receiver.mode = "silent"
        d = dispatch(hook(receiver, "dead", timeout_s=0.25, retries=0),
                     hook(other, "alive", timeout_s=5))
        spent: list[float] = []
        began = time.monotonic()
        for n in range(3):
            timed_submit(d, make_alert(n), spent)
        wait_for(lambda: len(other.keys()) == 3, timeout=1.0)
        assert time.monotonic() - began < 0.25  # not behind the dead one's first timeout
        wait_for(lambda: d.status()[0].gave_up == 3)
        receiver.mode = "ok"  # the outage ends
        timed_submit(d, make_alert(3), spent)
        wait_for(lambda: d.status()[0].delivered == 1)
        assert max(spent) < SUBMIT_LIMIT_S, spent
        assert receiver.keys()[-1] == make_alert(3).key
        assert d.status()[0].last_error == "no answer within 0.25 s"
        assert_no_secret(d, events)
    finally:
        other.close()


def test_a_refused_connection_fails_at_once_and_shows_no_secret(dispatch, events):
    free = Receiver()
    url_port = free.server.server_address[1]
    free.close()  # nothing listens there now
    notifier = WebhookNotifier("gone", f"http://127.0.0.1:{url_port}{SECRET_PATH}")
    d = dispatch(Channel(notifier, DeliveryPolicy(retries=0), notifier.describe()))
    d.submit(make_alert())
    wait_for(lambda: d.status()[0].gave_up == 1)
    assert d.status()[0].last_error == "Connection refused"
    assert "gone (webhook http://127.0.0.1:" in events[0].message
    assert_no_secret(d, events)
