"""One process's history across samples: what the dashboard's process detail view plots.

A process is known by (PID, start time), so a PID the kernel hands to a new process is another
process. Its readings are summed or averaged over every GPU it holds: GPU memory summed, SM%
averaged (each GPU's share of its own SMs), CPU% and host memory as the host reports them (the
same on each GPU's entry). A trace is a bounded ring, kept only while someone looks at it: the
detail view makes one when it opens (filled from the sampler's own history, so the plots start
with the past) and drops it when it closes. Pure: no Textual, no device.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gputop.core.model import Process, Snapshot

ProcessKey = tuple[int, float | None]  # (PID as the device reports it, start time)

TRACE_POINTS = 600  # as many samples as the sampler keeps: ten minutes at 1 s


def key_of(process: Process) -> ProcessKey:
    return (process.pid, process.started)


def entries(snapshot: Snapshot, key: ProcessKey) -> list[tuple[int, Process]]:
    """(GPU index, the process's entry there) for each GPU the process holds in ``snapshot``."""
    return [(dev.index, p) for dev in snapshot.devices for p in dev.processes
            if (p.pid, p.started) == key and not p.outside_pid_namespace]


@dataclass(frozen=True, slots=True)
class TracePoint:
    time: float
    gpu_memory_mib: float | None
    sm_pct: float | None
    cpu_pct: float | None
    host_memory_mib: float | None


def _known(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def point(snapshot: Snapshot, key: ProcessKey) -> TracePoint | None:
    """The process's readings in one sample; None where it holds no GPU in it. A reading no GPU
    reports stays None (a gap in the plot), never 0."""
    found = [p for _, p in entries(snapshot, key)]
    return combined(found, snapshot.time) if found else None


def combined(found: Sequence[Process], time: float) -> TracePoint:
    """One process's readings from its entries on each GPU it holds (see the module's doc)."""
    memory = _known(p.gpu_memory_mib for p in found)
    sm = _known(p.sm_pct for p in found)
    cpu = _known(p.cpu_pct for p in found)
    host = _known(p.host_memory_mib for p in found)
    return TracePoint(
        time=time,
        gpu_memory_mib=sum(memory) if memory else None,
        sm_pct=sum(sm) / len(sm) if sm else None,
        cpu_pct=cpu[0] if cpu else None,
        host_memory_mib=host[0] if host else None,
    )


class ProcessTrace:
    """The readings of one process, oldest first, at most ``maxlen`` of them; ``gone_since``
    says when it stopped appearing (its last plots stay)."""

    def __init__(self, key: ProcessKey, maxlen: int = TRACE_POINTS) -> None:
        self.key = key
        self.points: deque[TracePoint] = deque(maxlen=maxlen)
        self.last_time: float | None = None  # of the last sample taken in, with or without it
        self.gone_since: float | None = None

    def add(self, snapshot: Snapshot) -> TracePoint | None:
        """Take one sample in (older or repeated samples are ignored); its point, if present."""
        if self.last_time is not None and snapshot.time <= self.last_time:
            return None
        self.last_time = snapshot.time
        p = point(snapshot, self.key)
        if p is None:
            if self.points and self.gone_since is None:
                self.gone_since = snapshot.time
            return None
        self.gone_since = None  # back on a GPU
        self.points.append(p)
        return p

    def extend(self, snapshots: Iterable[Snapshot]) -> None:
        for snap in snapshots:
            self.add(snap)

    def series(self, attr: str) -> list[float | None]:
        return [getattr(p, attr) for p in self.points]

    def times(self) -> list[float]:
        return [p.time for p in self.points]
