"""Alerts over a whole cluster, evaluated on the viewer's side: one `Alerting` over every
node's snapshots, each alert named by the node as the cluster view names it.

Evaluated here rather than on each node, so that it works alike whatever brought the snapshot
(an agent over SSH, nvidia-smi over SSH, Prometheus), with the viewer's rules and channels.
A node's snapshot is handed over once, when a new one has arrived (`NodeStatus.received`
moved); a node with a summary alone (a Prometheus node nobody opened) has nothing to evaluate,
so a view with alerts asks its source for every node whole (`wants_every_node`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace

from gputop.alerts.model import Alert
from gputop.alerts.notify.dispatch import DeliveryEvent
from gputop.alerts.runtime import AlertConfig, Alerting
from gputop.cluster.node import NodeStatus

# The delivery events a viewer shows as a notice; the others are in the channels' counts.
SHOWN_EVENTS = ("gave-up", "dropped", "lost")


class ClusterAlerts:
    """The rules of ``config`` over every node's snapshots; see the module's docstring."""

    wants_every_node = True

    def __init__(self, config: AlertConfig) -> None:
        self._problems: list[str] = []
        self._lock = threading.Lock()
        # node=None: the engine names each alert by its snapshot's host, set to the view's name
        self.alerting = Alerting(config, on_event=self._on_event, on_error=self._on_error)
        self._seen: dict[str, float | None] = {}

    def observe(self, statuses: Iterable[NodeStatus]) -> tuple[Alert, ...]:
        """Evaluate every node whose snapshot is new since the last call; return the alerts
        fired and resolved, oldest node first in the view's order."""
        out: list[Alert] = []
        for status in statuses:
            if status.received is None or self._seen.get(status.host) == status.received:
                continue
            snap = status.snapshot  # None for a summary alone: nothing to evaluate
            if snap is None:
                continue
            self._seen[status.host] = status.received
            if snap.host != status.host:
                snap = replace(snap, host=status.host)
            out.extend(self.alerting.observe(snap))
        return tuple(out)

    def firing_by_node(self) -> dict[str, int]:
        """Return how many alerts fire now on each node that has any."""
        counts: dict[str, int] = {}
        for alert in self.alerting.firing:
            if alert.node is not None:
                counts[alert.node] = counts.get(alert.node, 0) + 1
        return counts

    def problems(self) -> list[str]:
        """Return, and forget, the delivery and journal problems since the last call."""
        with self._lock:
            taken, self._problems = self._problems, []
        return taken

    def close(self) -> bool:
        """Give the channels their deadline to deliver what they hold."""
        return self.alerting.close()

    def _on_event(self, event: DeliveryEvent) -> None:  # on a channel's thread
        if event.kind in SHOWN_EVENTS:
            with self._lock:
                self._problems.append(event.message)

    def _on_error(self, text: str) -> None:
        with self._lock:
            self._problems.append(text)
