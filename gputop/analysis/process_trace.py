"""One process's history, for the dashboard's process detail view: a reader over the sampler's
history (gputop.history), which keeps each process's series for an hour, also after it ended.

A process is known by (PID, start time), so a PID the kernel hands to a new process is another
process. Its readings are combined over every GPU it holds (gputop.history.fields): GPU memory
summed, SM% averaged, CPU% and host memory as the host reports them. Pure: no Textual, no device.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputop.core.model import Process, Snapshot
from gputop.history import Columns, History, ProcessKey, process_key

key_of = process_key


def entries(snapshot: Snapshot, key: ProcessKey) -> list[tuple[int, Process]]:
    """(GPU index, the process's entry there) for each GPU the process holds in ``snapshot``."""
    return [(dev.index, p) for dev in snapshot.devices for p in dev.processes
            if (p.pid, p.started) == key and not p.outside_pid_namespace]


class ProcessTrace:
    """The readings of one process in ``history``, oldest first; ``gone_since`` says when it
    stopped appearing (its series stay until they age out)."""

    def __init__(self, key: ProcessKey, history: History) -> None:
        self.key = key
        self.history = history

    def columns(self, names: Sequence[str], points: int | None = None) -> Columns:
        """(times, values of each field named), the newest ``points`` of them where given."""
        return self.history.process_columns(self.key, names, points=points)

    def samples(self) -> int:
        return len(self.history.process_columns(self.key, ())[0])

    @property
    def gone_since(self) -> float | None:
        """The first sample without it, once it left the GPUs; None while it holds one."""
        seen = self.history.process(self.key)
        return seen.gone_at if seen is not None else None
