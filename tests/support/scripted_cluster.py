"""A cluster source with fixed statuses, for the cluster screen's tests."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from gputop.cluster.node import NodeStatus


class ScriptedCluster:
    """A cluster source (gputop.cluster.source.ClusterSource) with fixed statuses."""

    problem = None
    version = 1

    def __init__(self, statuses: list[NodeStatus]) -> None:
        self._statuses = statuses

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def statuses(self) -> list[NodeStatus]:
        return list(self._statuses)

    def status(self, host: str) -> NodeStatus:
        return next(s for s in self._statuses if s.host == host)

    def wait(self, predicate: Callable[[list[NodeStatus]], bool], timeout: float) -> bool:
        return predicate(self.statuses())

    @staticmethod
    def settled(statuses: Sequence[NodeStatus]) -> bool:
        return True

    def detail(self, hosts: Collection[str] = (), every: bool = False) -> None:
        pass  # every node's snapshot is here whole
