"""The dispatcher's policy with fake notifiers and tiny delays: submit never waits, a dead channel
delays no other, a full queue drops its oldest, failures are retried with back-off then given
up, and close keeps to its deadline."""

from __future__ import annotations

import threading
import time

import pytest

from gputop.alerts.model import DeliveryError
from gputop.alerts.notify.dispatch import (
    Channel,
    DeliveryEvent,
    DeliveryPolicy,
    Dispatcher,
    backoff_delay,
)
from tests.support.notify import Recorder, make_alert

FAST = DeliveryPolicy(timeout_s=5.0, retries=2, backoff_s=0.001, backoff_max_s=0.004, queue=100)


def wait_for(check, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


@pytest.fixture
def events():
    return []


@pytest.fixture
def dispatchers():
    made: list[Dispatcher] = []
    yield made
    for d in made:
        d.close(0.5)


def start(dispatchers, events, *channels: Channel, **kw) -> Dispatcher:
    d = Dispatcher(channels, events.append, **kw)
    dispatchers.append(d)
    return d


def test_backoff_doubles_is_capped_and_jittered_in_its_second_half():
    policy = DeliveryPolicy(backoff_s=1.0, backoff_max_s=5.0)
    assert [backoff_delay(n, policy, 1.0) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert backoff_delay(2, policy, 0.0) == 1.0
    assert backoff_delay(2, policy, 0.5) == 1.5


def test_submit_returns_at_once_while_the_channel_hangs(dispatchers, events):
    gate = threading.Event()
    dead = Recorder("dead", gate=gate)
    d = start(dispatchers, events, Channel(dead, DeliveryPolicy(queue=1000)))
    d.submit(make_alert(0))
    dead.started.wait(2)
    began = time.perf_counter()
    for n in range(1, 501):
        d.submit(make_alert(n))
    per_call = (time.perf_counter() - began) / 500
    assert per_call < 0.002, per_call
    gate.set()
    wait_for(lambda: len(dead.sent) == 501)
    assert [a.key for a in dead.sent] == [make_alert(n).key for n in range(501)]  # in order


def test_a_dead_channel_delays_no_other(dispatchers, events):
    gate = threading.Event()
    dead, alive = Recorder("dead", gate=gate), Recorder("alive")
    d = start(dispatchers, events, Channel(dead, FAST), Channel(alive, FAST))
    for n in range(3):
        d.submit(make_alert(n))
    wait_for(lambda: len(alive.sent) == 3, timeout=1.0)
    assert dead.sent == []
    gate.set()
    wait_for(lambda: len(dead.sent) == 3)


def test_a_full_queue_drops_its_oldest_counts_and_reports_it(dispatchers, events):
    gate = threading.Event()
    slow = Recorder("slow", gate=gate)
    d = start(dispatchers, events, Channel(slow, DeliveryPolicy(queue=2)))
    d.submit(make_alert(0))
    slow.started.wait(2)  # alert 0 is in flight; the queue holds two more
    for n in range(1, 6):
        d.submit(make_alert(n))
    (status,) = d.status()
    assert (status.queued, status.dropped) == (2, 3)
    gate.set()
    wait_for(lambda: len(slow.sent) == 3)
    assert [a.key for a in slow.sent] == [make_alert(n).key for n in (0, 4, 5)]
    drops = [e for e in events if e.kind == "dropped"]
    assert len(drops) == 1 and "3 older alert(s) dropped" in drops[0].message


def test_a_failure_is_retried_after_a_back_off_and_counted(dispatchers, events):
    flaky = Recorder("flaky", fail=2)
    d = start(dispatchers, events, Channel(flaky, FAST, label="webhook https://h/… (slack)"),
              rand=lambda: 1.0)
    d.submit(make_alert())
    wait_for(lambda: len(flaky.sent) == 1)
    kinds = [e.kind for e in events]
    assert kinds == ["retry", "retry", "delivered"]
    assert events[0].message == ("alert channel flaky (webhook https://h/… (slack)): hot firing: "
                                 "attempt 1 of 3 failed: HTTP 500: boom; retrying in 0.0 s")
    (status,) = d.status()
    assert (status.delivered, status.failed_attempts, status.gave_up) == (1, 2, 0)
    assert status.last_error == "HTTP 500: boom" and status.last_delivered_at is not None


def test_an_alert_that_fails_every_attempt_is_given_up_and_the_next_is_delivered(
        dispatchers, events):
    flaky = Recorder("flaky", fail=3)  # 1 + 2 retries fail: the first alert is given up
    d = start(dispatchers, events, Channel(flaky, FAST))
    d.submit(make_alert(0))
    d.submit(make_alert(1))
    wait_for(lambda: len(flaky.sent) == 1)
    assert flaky.sent[0].key == make_alert(1).key
    gave_up = [e for e in events if e.kind == "gave-up"]
    assert len(gave_up) == 1 and gave_up[0].key == make_alert(0).key
    assert "not delivered after 3 attempt(s): HTTP 500: boom" in gave_up[0].message
    (status,) = d.status()
    assert (status.gave_up, status.failed_attempts, status.delivered) == (1, 3, 1)


def test_each_attempt_gets_the_policy_timeout(dispatchers, events):
    rec = Recorder("rec")
    d = start(dispatchers, events, Channel(rec, DeliveryPolicy(timeout_s=2.5)))
    d.submit(make_alert())
    wait_for(lambda: rec.sent)
    assert rec.timeouts == [2.5]


def test_submit_reaches_only_the_channels_named(dispatchers, events):
    a, b = Recorder("alpha"), Recorder("beta")
    d = start(dispatchers, events, Channel(a, FAST), Channel(b, FAST))
    d.submit(make_alert(0), to="beta")  # one name, not its letters
    d.submit(make_alert(0), to=["beta", "nowhere"])
    d.submit(make_alert(1), to=[])
    d.submit(make_alert(2))
    wait_for(lambda: len(b.sent) == 3 and len(a.sent) == 1)
    assert [x.key for x in a.sent] == [make_alert(2).key]


def test_a_notifier_bug_or_a_broken_logger_does_not_end_the_channel(dispatchers):
    buggy = Recorder("buggy", error=KeyError("secret-ish detail"))

    def broken_log(event: DeliveryEvent) -> None:
        raise RuntimeError("log is gone")

    d = Dispatcher([Channel(buggy, FAST)], broken_log)
    dispatchers.append(d)
    d.submit(make_alert(0))
    wait_for(lambda: d.status()[0].gave_up == 1)
    assert d.status()[0].last_error == "unexpected KeyError (a bug in gputop)"
    buggy.error = None
    d.submit(make_alert(1))
    wait_for(lambda: len(buggy.sent) == 1)


def test_close_delivers_what_is_queued_within_its_deadline(events):
    rec = Recorder("rec")
    d = Dispatcher([Channel(rec, FAST)], events.append)
    for n in range(20):
        d.submit(make_alert(n))
    assert d.close(3.0) is True
    assert len(rec.sent) == 20 and not any(e.kind == "lost" for e in events)
    d.submit(make_alert(99))  # after close: ignored, never raises
    assert d.status()[0].queued == 0


def test_close_never_waits_past_its_deadline_for_a_channel_that_hangs(events):
    gate = threading.Event()
    dead = Recorder("dead", gate=gate)
    stopped = threading.Event()
    d = Dispatcher([Channel(dead, DeliveryPolicy(timeout_s=60, queue=10), stop=stopped.set)],
                   events.append)
    for n in range(4):
        d.submit(make_alert(n))
    dead.started.wait(2)
    began = time.monotonic()
    assert d.close(0.1) is False
    took = time.monotonic() - began
    assert took < 0.1 + 0.5, took
    assert stopped.is_set()  # a command in flight would be killed
    assert dead.timeouts[0] == 60  # the attempt before close began kept its own timeout
    (status,) = d.status()
    assert status.lost == 3 and status.queued == 0
    assert any(e.kind == "lost" and "3 alert(s)" in e.message for e in events)
    gate.set()


def test_close_cuts_a_back_off_short(events):
    failing = Recorder("failing", fail=100)
    policy = DeliveryPolicy(timeout_s=1, retries=5, backoff_s=30, backoff_max_s=30)
    d = Dispatcher([Channel(failing, policy)], events.append)
    d.submit(make_alert())
    wait_for(lambda: any(e.kind == "retry" for e in events))
    began = time.monotonic()
    d.close(0.1)
    assert time.monotonic() - began < 0.6
    assert d.status()[0].lost == 1


def test_two_channels_of_one_name_are_refused():
    with pytest.raises(ValueError, match="two channels named 'x'"):
        Dispatcher([Channel(Recorder("x")), Channel(Recorder("x"))])


def test_a_delivery_error_message_is_kept_as_one_line(dispatchers, events):
    rec = Recorder("rec", error=DeliveryError("HTTP 400:\ninvalid_payload\x1b[2J"))
    d = start(dispatchers, events, Channel(rec, DeliveryPolicy(retries=0)))
    d.submit(make_alert())
    wait_for(lambda: d.status()[0].gave_up == 1)
    assert d.status()[0].last_error == "HTTP 400: invalid_payload^[[2J"
