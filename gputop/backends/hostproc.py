"""Host-side facts about the processes a device reports: user, command line, CPU%, RSS, start.

psutil's ``cpu_percent`` measures between two calls on the *same* ``Process`` object, so the
objects are kept per pid across ticks; static facts (user, name, command, start time) are read
once per process. A pid that vanished or that we may not inspect gives ``None`` fields, never an
error. psutil is imported on first use (it costs ~20 ms of start-up).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(slots=True)
class HostFacts:
    user: str | None = None
    name: str | None = None
    command: str | None = None
    started: float | None = None
    cpu_pct: float | None = None
    host_memory_mib: float | None = None


class _Entry:
    __slots__ = ("proc", "facts", "measured")

    def __init__(self, proc, facts: HostFacts) -> None:
        self.proc = proc
        self.facts = facts
        self.measured = False  # psutil's first cpu_percent() is a meaningless 0.0


NO_FACTS = HostFacts()


class HostProcesses:
    """A per-pid cache of psutil ``Process`` objects and their static facts."""

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        self._psutil = None

    def _module(self):
        if self._psutil is None:
            import psutil

            self._psutil = psutil
        return self._psutil

    def lookup(self, pid: int) -> HostFacts:
        """Fresh dynamic facts (CPU%, RSS) and cached static ones for ``pid``."""
        psutil = self._module()
        entry = self._entries.get(pid)
        if entry is None:
            entry = self._open(pid)
            if entry is None:
                return NO_FACTS
        proc = entry.proc
        facts = entry.facts
        try:
            with proc.oneshot():
                if proc.create_time() != facts.started:  # the pid was reused
                    del self._entries[pid]
                    return self.lookup(pid)
                cpu = proc.cpu_percent(None)
                rss = proc.memory_info().rss
        except psutil.NoSuchProcess:
            self._entries.pop(pid, None)
            return NO_FACTS
        except (psutil.AccessDenied, OSError):
            return facts
        facts.cpu_pct = cpu if entry.measured else None
        entry.measured = True
        facts.host_memory_mib = round(rss / MIB, 1)
        return facts

    def _open(self, pid: int) -> _Entry | None:
        psutil = self._module()
        try:
            proc = psutil.Process(pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
            return None
        facts = HostFacts()
        try:
            with proc.oneshot():
                facts.started = proc.create_time()
                facts.name = _try(proc.name, psutil)
                facts.user = _try(proc.username, psutil)
                cmdline = _try(proc.cmdline, psutil)
        except psutil.NoSuchProcess:
            return None
        if cmdline:
            facts.command = " ".join(cmdline)
        elif facts.name:
            facts.command = facts.name  # kernel threads and zombies have no command line
        entry = _Entry(proc, facts)
        self._entries[pid] = entry
        return entry

    def prune(self, live: Iterable[int]) -> None:
        """Forget pids no device reports any more."""
        keep = set(live)
        for pid in [p for p in self._entries if p not in keep]:
            del self._entries[pid]


def _try(fn, psutil):
    try:
        return fn()
    except (psutil.AccessDenied, psutil.ZombieProcess, OSError):
        return None
