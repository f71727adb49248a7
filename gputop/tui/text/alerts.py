"""What the dashboard says of alerts, importable without Textual: the notice of each transition,
the notice of a channel in trouble, the alerts screen's rows (`!`) and its channels' lines."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from gputop.alerts.model import Alert, Severity
from gputop.alerts.notify.dispatch import ChannelStatus, DeliveryEvent
from gputop.alerts.notify.payloads import headline
from gputop.alerts.runtime import Record
from gputop.core.visible import visible

NoticeSeverity = Literal["information", "warning", "error"]  # Textual's SeverityLevel
# Textual's notice severities, per alert severity
NOTICE_SEVERITY: dict[Severity, NoticeSeverity] = {
    "critical": "error", "warning": "warning", "info": "information"}
# How long a fired alert's notice stays: a critical one until it is likely seen
NOTICE_TIMEOUT_S = {"critical": 30.0, "warning": 10.0, "info": 5.0}
# A resolution is worth a notice only where its firing was: quiet for info rules
RESOLVED_NOTICE = frozenset({"critical", "warning"})
NOTICES_PER_SAMPLE = 3  # past this, one notice says how many more (8 GPUs hot at once)
# The delivery events a person is told of: an alert given up on, alerts dropped from a full
# queue. A retry is not news (its give-up is); a loss at close has nobody left to tell.
TROUBLE = frozenset({"gave-up", "dropped"})


@dataclass(frozen=True)
class Notice:
    """One notice: its text, title, Textual severity and how long it stays."""

    message: str
    title: str
    severity: NoticeSeverity
    timeout: float


def transition_notice(alert: Alert) -> Notice | None:
    """Return the notice for one transition: every firing, and the resolution of a critical
    or warning rule; None for an info rule's resolution."""
    if alert.state == "resolved" and alert.severity not in RESOLVED_NOTICE:
        return None
    severity = NOTICE_SEVERITY[alert.severity] if alert.state == "firing" else "information"
    timeout = NOTICE_TIMEOUT_S[alert.severity] if alert.state == "firing" else 5.0
    return Notice(visible(alert.summary), headline(alert), severity, timeout)


def transition_notices(alerts: Sequence[Alert]) -> list[Notice]:
    """Return the notices of one sample's transitions: each, up to `NOTICES_PER_SAMPLE`, then
    one that counts the rest (the alerts screen lists them), at the worst severity left out."""
    shown = [n for n in (transition_notice(a) for a in alerts) if n is not None]
    if len(shown) <= NOTICES_PER_SAMPLE:
        return shown
    rest = shown[NOTICES_PER_SAMPLE - 1:]
    worst: NoticeSeverity = next(
        (s for s in ("error", "warning") if any(n.severity == s for n in rest)), "information")
    more = Notice(f"and {len(rest)} more: press ! for the alerts", "alerts", worst,
                  max(n.timeout for n in rest))
    return [*shown[:NOTICES_PER_SAMPLE - 1], more]


def trouble_key(event: DeliveryEvent) -> tuple[str, str] | None:
    """Return what a delivery event is told once as (channel, cause); None for an event that
    is no trouble (delivered, a retry, a loss at close)."""
    return (event.channel, event.kind) if event.kind in TROUBLE else None


# ------------------------------------------------------------------ the alerts screen

@dataclass(frozen=True)
class AlertRow:
    """One row of the alerts screen: a transition (`KeyedTable`'s row shape)."""

    key: str
    cells: tuple[str, ...]
    styles: tuple[str | None, ...]
    alert: Alert


# (key, title, width); width 0 takes the rest
COLUMNS = (("time", "TIME", 8), ("node", "NODE", 12), ("gpu", "GPU", 3),
           ("severity", "SEVERITY", 8), ("state", "STATE", 9), ("ack", "ACK", 3),
           ("summary", "SUMMARY", 0))
FIRING_MARK = "● firing"  # a transition whose alert fires now
SEVERITY_STYLE: dict[Severity, str | None] = {"critical": "bad", "warning": "warn",
                                              "info": None}


def row_key(alert: Alert) -> str:
    """Return the row's key: one transition (a subject fires again with another time)."""
    return f"{alert.key}@{alert.at!r}"


def clock(at: float, now: float) -> str:
    """Return a transition's time: ``HH:MM:SS`` on the day of ``now``, else ``Mon DD``."""
    when, today = time.localtime(at), time.localtime(now)
    same_day = (when.tm_year, when.tm_yday) == (today.tm_year, today.tm_yday)
    return time.strftime("%H:%M:%S" if same_day else "%b %d", when)


def alert_rows(records: Iterable[Record], firing: Iterable[Alert], now: float) -> list[AlertRow]:
    """Return the rows for ``records`` (newest first, as `Alerting.history` gives them): a
    transition still firing is marked and drawn at its severity; the rest is muted."""
    live = {(a.key, a.at) for a in firing}
    rows = []
    for record in records:
        a = record.alert
        on = a.state == "firing" and (a.key, a.at) in live
        state = FIRING_MARK if on else ("fired" if a.state == "firing" else "resolved")
        style = SEVERITY_STYLE[a.severity] if on else "muted"
        cells = (clock(a.at, now), a.node or "", "" if a.gpu is None else str(a.gpu),
                 a.severity, state, "✓" if record.acknowledged else "", a.summary)
        rows.append(AlertRow(row_key(a), cells,
                             (None, None, None, style, style, None, style if on else None), a))
    return rows


def channel_lines(statuses: Sequence[ChannelStatus], now: float) -> list[tuple[str, str]]:
    """Return (text, style) lines, one per channel: what it is, what it delivered and failed,
    and its last error with its time (red while it failed last); a line saying none where no
    channel is set."""
    if not statuses:
        return [("No channel: alerts show here only ([alerts.channel.NAME] in the settings "
                 "file; see docs/alerts-channels.md).", "dim")]
    out = []
    for s in statuses:
        label = f"{s.name} ({s.label})" if s.label else s.name
        counts = f"delivered {s.delivered}"
        for word, n in (("queued", s.queued), ("failed", s.gave_up), ("dropped", s.dropped),
                        ("lost", s.lost)):
            if n:
                counts += f", {word} {n}"
        text = f"{visible(label)}: {counts}"
        style = ""
        if s.last_error is not None:
            at = "" if s.last_error_at is None else f" at {clock(s.last_error_at, now)}"
            text += f"; last error{at}: {visible(s.last_error)}"
            failing = s.last_delivered_at is None or (s.last_error_at or 0) > s.last_delivered_at
            style = "bold red" if failing else "yellow"
        out.append((text, style))
    return out

