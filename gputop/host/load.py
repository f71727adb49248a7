"""This machine's own load, for the dashboard's host line: CPU %, load average, RAM, swap and
uptime, as htop and btop show them. Read on the sampler's thread (never the UI's), at most once a
second; each read is a handful of /proc reads through psutil."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class HostFacts:
    cpu_pct: float  # whole node, since the previous read (HostReader primes the count)
    load: tuple[float, float, float] | None  # 1, 5, 15 minutes
    mem_used: int  # bytes: total minus available, as btop counts it
    mem_total: int
    swap_used: int
    swap_total: int
    uptime_s: float


class HostReader:
    """Reads HostFacts no more often than ``min_gap_s``; None in between."""

    def __init__(self, min_gap_s: float = 1.0) -> None:
        self.min_gap_s = min_gap_s
        self._last: float | None = None
        psutil.cpu_percent(interval=None)  # the first call only starts the count

    def due(self) -> HostFacts | None:
        now = time.monotonic()
        if self._last is not None and now - self._last < self.min_gap_s:
            return None
        self._last = now
        return read()


def read() -> HostFacts:
    mem = psutil.virtual_memory()
    swap = psutil.swap_memory()
    try:
        load = tuple(psutil.getloadavg())
    except (OSError, AttributeError):
        load = None
    return HostFacts(cpu_pct=psutil.cpu_percent(interval=None), load=load,  # type: ignore[arg-type]
                     mem_used=mem.total - mem.available, mem_total=mem.total,
                     swap_used=swap.used, swap_total=swap.total,
                     uptime_s=max(0.0, time.time() - psutil.boot_time()))
