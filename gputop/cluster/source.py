"""The cluster source: what the cluster screen and ``gputop cluster --once`` call on a transport.

Two transports implement it: :class:`~gputop.cluster.transport.Cluster` (one ssh session per
node) and :class:`~gputop.cluster.prometheus.PrometheusCluster` (one Prometheus server for the
fleet). A view polls it from its own thread; the transport works on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Protocol

from gputop.cluster.node import NodeStatus


class ClusterSource(Protocol):
    """Declare how a consumer starts, reads and stops a watch over many nodes."""

    @property
    def version(self) -> int:
        """Return a counter that moves whenever a status changed: poll it, then read."""

    @property
    def problem(self) -> str | None:
        """Return the transport's own trouble as one line (Prometheus unreachable), else None.

        Each node's own trouble is its status's ``reason``."""

    def start(self) -> None:
        """Start watching, on the transport's own thread."""

    def stop(self) -> None:
        """Stop watching and end what the watch started; the screen calls this as it quits."""

    def statuses(self) -> list[NodeStatus]:
        """Return every node's status, in the transport's order."""

    def status(self, host: str) -> NodeStatus:
        """Return the status of the node called ``host``; KeyError if there is none."""

    def wait(self, predicate: Callable[[list[NodeStatus]], bool], timeout: float) -> bool:
        """Block until ``predicate(statuses)`` holds or ``timeout`` passes; True if it held."""

    def settled(self, statuses: Sequence[NodeStatus]) -> bool:
        """Return True when ``--once`` has its answer: no node will change any more."""

    def detail(self, hosts: Collection[str] = (), every: bool = False) -> None:
        """Say which nodes a view shows whole (opened ones, or ``every`` one for the users view).

        A transport that fetches summaries alone for the others (Prometheus) fetches these
        whole from its next refresh on; one that always gets every node whole does nothing."""
