"""Alerts at work in one consumer: the engine, its journal and the channels, fed snapshot by
snapshot.

The dashboard, ``gputop watch``, the agent and the cluster view each hold one `Alerting` and
hand it every snapshot they get (`observe`); it fires and resolves the rules, writes each
transition to the journal before anything else (so a restart knows it), and queues it for the
rule's channels, which deliver on their own threads (`gputop.alerts.notify.dispatch`): feeding
it never waits on a network or a command. It keeps the last alerts, with what a person has
acknowledged, for a screen to list.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gputop.alerts import journal as journals
from gputop.alerts.engine import AlertEngine
from gputop.alerts.model import Alert, Rule
from gputop.alerts.notify.dispatch import Channel, ChannelStatus, DeliveryEvent, Dispatcher
from gputop.alerts.rules import parse_rules
from gputop.core.model import Snapshot
from gputop.core.userfile import one_line

if TYPE_CHECKING:  # the channels' machinery loads only where a channel is set up
    from gputop.alerts.notify.channels import ChannelConfig
    from gputop.alerts.notify.terminal import Writable

HISTORY = 500  # alerts a screen can list; older ones are in the journal
CLOSE_DEADLINE_S = 5.0  # what an exiting consumer gives its channels to deliver what they hold


@dataclass(frozen=True)
class AlertConfig:
    """The settings file's ``[alerts]`` table, checked: the rules in force (defaults included),
    the channels, and the journal (None: keep none, as a test or a one-off run may ask)."""

    rules: tuple[Rule, ...]
    channels: tuple[ChannelConfig, ...] = ()
    journal: Path | None = None
    where: str = "settings"


def read_config(table: Mapping[str, object] | None, where: str,
                environ: Mapping[str, str] | None = None) -> AlertConfig:
    """Check the ``[alerts]`` ``table`` of the settings file ``where`` (None: none, the
    defaults alone) into an `AlertConfig`; raises `UsageError` naming the rule, channel or key
    that is wrong, before any device is opened."""
    rules = parse_rules(table, where)
    channels: tuple[ChannelConfig, ...] = ()
    if table and "channel" in table:
        from gputop.alerts.notify import channels as channel_configs

        channels = channel_configs.parse(table["channel"], where)
    return AlertConfig(rules, channels, journals.journal_path(table, where, environ), where)


def from_settings(option: str | None, no_config: bool,
                  environ: Mapping[str, str] | None = None) -> AlertConfig:
    """Find the settings file as the dashboard does (``--config``'s ``option``,
    ``$GPUTOP_CONFIG``, ``--no-config``) and check its ``[alerts]`` table (`read_config`): every
    command that alerts (``gputop alerts``, ``gputop watch``, the cluster view) reads it so."""
    config = written_config(option, no_config, environ)
    return config if config is not None else read_config(None, "settings", environ)


def written_config(option: str | None, no_config: bool,
                   environ: Mapping[str, str] | None = None) -> AlertConfig | None:
    """Return `from_settings`'s config where the settings file has an ``[alerts]`` table, else
    None: for a consumer whose alerts cost enough to be asked for (the cluster view)."""
    from gputop.config.settings import load, settings_path

    path, named = settings_path(option, no_config, environ)
    found = load(path, named)
    if found.alerts is None:
        return None
    return read_config(found.alerts, found.path or "settings", environ)


@dataclass(frozen=True)
class Record:
    """One alert as a screen lists it, and whether a person acknowledged it."""

    alert: Alert
    acknowledged: bool = False


class Alerting:
    """The rules of ``config`` at work on one consumer's snapshots; see the module's
    docstring. ``terminal``: where the bell and OSC channels write (None: they are skipped,
    `skipped` says so). ``on_event``: every delivery failure, retry and drop, for a log or a
    notice; called on a channel's thread. ``on_error``: a journal that cannot be written."""

    def __init__(self, config: AlertConfig, *, node: str | None = None,
                 terminal: Writable | None = None,
                 on_event: Callable[[DeliveryEvent], None] | None = None,
                 on_error: Callable[[str], None] | None = None) -> None:
        self.config = config
        state = journals.load_state(config.journal) if config.journal is not None else None
        self.engine = AlertEngine(config.rules, node=node, journal_state=state)
        channels: tuple[Channel, ...] = ()
        self.skipped: tuple[str, ...] = ()
        if config.channels:
            from gputop.alerts.notify import channels as channel_configs

            built = channel_configs.build(config.channels, config.where, terminal)
            channels, self.skipped = built.channels, built.skipped
        self.dispatcher = Dispatcher(channels, on_event)
        self._journal = journals.Journal(config.journal) if config.journal is not None else None
        self._notify = {r.name: r.notify for r in config.rules}
        self._history: deque[Alert] = deque(maxlen=HISTORY)
        self._acknowledged: set[tuple[str, float]] = set()
        self._on_error = on_error
        self.journal_error: str | None = None

    def observe(self, snap: Snapshot) -> tuple[Alert, ...]:
        """Fire and resolve the rules on ``snap``; journal and queue what changed; return it."""
        alerts = self.engine.observe(snap)
        if not alerts:
            return alerts
        self._write(alerts)
        for alert in alerts:
            self.dispatcher.submit(alert, self._notify.get(alert.rule))
            self._history.append(alert)
        return alerts

    def _write(self, alerts: tuple[Alert, ...]) -> None:
        if self._journal is None:
            return
        try:
            self._journal.append(alerts)
        except OSError as exc:
            # Alerts still go out; only a restart could fire them again. Said once per cause.
            text = (f"cannot write the alert journal {one_line(str(self._journal.path))}: "
                    f"{exc.strerror or exc}")
            if text != self.journal_error:
                self.journal_error = text
                if self._on_error is not None:
                    self._on_error(text)
        else:
            self.journal_error = None

    @property
    def firing(self) -> tuple[Alert, ...]:
        """Return the alerts firing now, oldest first."""
        return self.engine.firing

    def history(self) -> list[Record]:
        """Return the last alerts, newest first, each with whether it was acknowledged."""
        return [Record(a, (a.key, a.at) in self._acknowledged) for a in reversed(self._history)]

    def acknowledge(self, alert: Alert) -> None:
        """Mark ``alert`` (one transition) as seen by a person."""
        self._acknowledged.add((alert.key, alert.at))

    def unacknowledged(self) -> int:
        """Return how many alerts firing now nobody has acknowledged."""
        return sum(1 for a in self.firing if (a.key, a.at) not in self._acknowledged)

    def status(self) -> tuple[ChannelStatus, ...]:
        """Return each channel's delivery counts and last error."""
        return self.dispatcher.status()

    def close(self, deadline_s: float = CLOSE_DEADLINE_S) -> bool:
        """Give the channels ``deadline_s`` to deliver what they hold; True if they did."""
        return self.dispatcher.close(deadline_s)
