"""`gputop watch` as a real process on the simulator's xid-thermal scenario, with a real webhook
receiver on 127.0.0.1 and a real command: each rule fires once within one sample of its
condition plus its duration, resolves once, and reaches both channels; a receiver that never
answers holds up no sample and loses no later alert; SIGTERM ends it at once with exit 0.
(The restart on the same journal is tested with the systemd unit, test_systemd_unit.py.)"""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from tests.support.watch_lab import (
    EXPECTED,
    HOT_FOR_S,
    INTERVAL_S,
    SCENARIO,
    Watch,
    by_rule,
    command_alerts,
    journal,
    logged,
    settings,
    wait_until,
)
from tests.support.webhook_receiver import Receiver

END = "resolved (warning) thermal-slowdown/"  # the scenario's last alert (~165 s of its clock)
SECRETS = ("T0SECRET", "SECRETSIG")


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def posted(receiver: Receiver) -> list[dict]:
    with receiver.lock:
        return [body["alert"] for _, _, body in receiver.requests]


def test_each_rule_fires_once_in_time_resolves_once_and_reaches_both_channels(
        tmp_path, receiver):
    out = tmp_path / "command.jsonl"
    config = settings(tmp_path / "config.toml", tmp_path / "journal.jsonl", receiver.url, out)
    watch = Watch.gputop("--config", str(config), *SCENARIO, "--sim-speed", "200")
    try:
        watch.wait_for(END)
        wait_until(lambda: by_rule(posted(receiver)) == EXPECTED
                   and by_rule(command_alerts(out)) == EXPECTED, 5,
                   lambda: f"{by_rule(posted(receiver))} {by_rule(command_alerts(out))}")
        rc, spent = watch.stop(signal.SIGTERM)
    finally:
        watch.kill()
    assert rc == 0 and spent < 2.0, (rc, spent)
    lines = watch.text()
    assert lines[-1] == "gputop watch: stopped by signal 15"
    alerts = journal(tmp_path / "journal.jsonl")
    assert by_rule(alerts) == EXPECTED  # once each, in the journal as at the channels
    assert Counter({(a["key"], a["state"]): 1 for a in alerts}) == logged(lines)
    assert not any(s in line for line in lines for s in SECRETS)

    fired = {a["rule"] + str(a["gpu"]): a for a in alerts if a["state"] == "firing"}
    # A duration: fired at the first sample at or past its start plus the duration.
    for rule, duration in (("hot2", HOT_FOR_S), ("thermal-slowdown2", 60.0)):
        held = fired[rule]["at"] - fired[rule]["since"]
        assert duration <= held < duration + INTERVAL_S, (rule, held)
    # Events, at the sample that saw them: Xid 13 comes 20 s of the scenario after Xid 79,
    # and GPU 1 is lost in the sample of its Xid 79.
    assert abs(fired["xid3"]["at"] - fired["xid1"]["at"] - 20.0) <= INTERVAL_S
    assert fired["gpu-lost1"]["at"] == fired["xid1"]["at"]


def test_a_dead_webhook_holds_up_no_sample_and_loses_no_later_alert(tmp_path, receiver):
    """The receiver takes the first post and never answers it (the channel's timeout is 2 s);
    it answers every later one. At --sim-speed 100 the Xid 13 comes 0.2 s after the Xid 79: a
    sampler that waited on the webhook would log it 2 s later or more."""
    receiver.mode = "silent"
    out = tmp_path / "command.jsonl"
    config = settings(tmp_path / "config.toml", tmp_path / "journal.jsonl", receiver.url, out,
                      timeout_s=2.0)
    watch = Watch.gputop("--config", str(config), *SCENARIO, "--sim-speed", "100")
    try:
        wait_until(lambda: bool(posted(receiver)), 10, lambda: "\n".join(watch.text()))
        with receiver.lock:
            receiver.mode = "ok"  # it recovers: the post in flight still never gets an answer
        watch.wait_for(END)
        watch.wait_for("not delivered after 1 attempt(s)")
        expected_later = EXPECTED - Counter({(posted(receiver)[0]["rule"],
                                              posted(receiver)[0]["gpu"], "firing"): 1})
        wait_until(lambda: by_rule(posted(receiver)[1:]) == expected_later, 5,
                   lambda: str(by_rule(posted(receiver))))
        gap = watch.arrived("/gpu3/xid13") - watch.arrived("/gpu1/xid79")
        assert gap < 1.5, gap  # 0.2 s of real time when nothing waits on the webhook
        assert by_rule(command_alerts(out)) == EXPECTED  # the other channel: untouched
        rc, spent = watch.stop(signal.SIGTERM)
    finally:
        watch.kill()
    assert rc == 0 and spent < 2.0, (rc, spent)
    lines = watch.text()
    gave_up = [line for line in lines if "not delivered" in line]
    assert len(gave_up) == 1 and gave_up[0].startswith("gputop watch: alert channel hook (webhook"
                                                       " http://127.0.0.1:")
    assert not any(s in line for line in lines for s in SECRETS)
