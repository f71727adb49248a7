"""The dashboard's notices of alerts (#29): each firing at its severity, a resolution only for
critical and warning rules, a burst cut to a few and a count, and a channel's trouble keyed by
channel and cause."""

from __future__ import annotations

from dataclasses import replace

from gputop.alerts.notify.dispatch import DeliveryEvent
from gputop.tui.text.alerts import (
    NOTICES_PER_SAMPLE,
    transition_notice,
    transition_notices,
    trouble_key,
)
from tests.support.notify import make_alert


def test_a_firing_is_a_notice_at_its_severity_with_its_headline():
    for severity, textual in (("critical", "error"), ("warning", "warning"),
                              ("info", "information")):
        notice = transition_notice(make_alert(severity=severity))
        assert notice is not None and notice.severity == textual
        assert notice.title == f"FIRING {severity}: hot on node-a GPU 0"
        assert notice.message == "GPU 0 at 91 °C for 2m (limit 85)"


def test_a_resolution_is_said_for_critical_and_warning_rules_only():
    resolved = make_alert(state="resolved")
    assert transition_notice(resolved).severity == "information"
    assert transition_notice(replace(resolved, severity="warning")) is not None
    assert transition_notice(replace(resolved, severity="info")) is None


def test_a_burst_is_a_few_notices_and_one_that_counts_the_rest_at_its_worst():
    alerts = [make_alert(n, severity="warning") for n in range(7)]
    alerts[-1] = replace(alerts[-1], severity="critical")
    notices = transition_notices(alerts)
    assert len(notices) == NOTICES_PER_SAMPLE
    assert notices[-1].message == f"and {len(alerts) - NOTICES_PER_SAMPLE + 1} more: press ! for the alerts"
    assert notices[-1].severity == "error"
    assert len(transition_notices(alerts[:NOTICES_PER_SAMPLE])) == NOTICES_PER_SAMPLE


def test_a_give_up_and_a_drop_are_trouble_a_retry_or_a_delivery_is_not():
    def event(kind: str) -> DeliveryEvent:
        return DeliveryEvent("ops", kind, "alert channel ops: …")  # type: ignore[arg-type]

    assert trouble_key(event("gave-up")) == ("ops", "gave-up")
    assert trouble_key(event("dropped")) == ("ops", "dropped")
    assert [trouble_key(event(k)) for k in ("retry", "delivered", "lost")] == [None] * 3
