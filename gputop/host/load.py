"""This machine's own load, for the dashboard's host line: CPU %, load average, RAM, swap and
uptime, as htop and btop show them. Read on the sampler's thread (never the UI's), at most once a
second, from ``/proc/stat`` and ``/proc/meminfo``: the files psutil reads for the same figures,
counted as psutil counts them, without loading psutil on the dashboard's first screen."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

# /proc/stat's cpu line: user nice system idle iowait irq softirq steal, then guest and
# guest_nice, which the kernel already counts in user and nice (psutil and htop leave them out)
CPU_FIELDS = 8
IDLE, IOWAIT = 3, 4


@dataclass(frozen=True)
class HostFacts:
    cpu_pct: float  # whole node, since the previous read (HostReader primes the count)
    load: tuple[float, float, float] | None  # 1, 5, 15 minutes
    mem_used: int  # bytes: total minus available, as btop counts it
    mem_total: int
    swap_used: int
    swap_total: int
    uptime_s: float


def cpu_times(stat: str) -> tuple[int, ...]:
    """The whole node's CPU times in clock ticks, from /proc/stat's ``cpu`` line (the first)."""
    line = stat.split("\n", 1)[0].split()
    if not line or line[0] != "cpu":
        raise ValueError("/proc/stat: no cpu line first")
    return tuple(int(x) for x in line[1:1 + CPU_FIELDS])


def busy_pct(before: tuple[int, ...], after: tuple[int, ...]) -> float:
    """% of the node's CPU time not idle (nor waiting for I/O) between two ``cpu_times``, in 0.1
    steps as psutil's ``cpu_percent`` gives it; a count that went backwards counts as 0."""
    deltas = [max(0, b - a) for a, b in zip(before, after, strict=False)]
    total = sum(deltas)
    if not total:
        return 0.0
    idle = sum(deltas[i] for i in (IDLE, IOWAIT) if i < len(deltas))
    return round(100.0 * (total - idle) / total, 1)


def boot_time(stat: str) -> float:
    """When the node booted (seconds since the epoch), from /proc/stat's ``btime`` line."""
    for line in stat.splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise ValueError("/proc/stat: no btime line")


def meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo's sizes in bytes by name (``MemTotal``, ``SwapFree``, …)."""
    sizes = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        value = rest.split()
        if value and value[0].isdigit():
            sizes[name] = int(value[0]) * (1024 if value[1:] == ["kB"] else 1)
    return sizes


def facts(stat: str, mem: str, before: tuple[int, ...], load: tuple[float, float, float] | None,
          now: float) -> HostFacts:
    """The host line's facts from the text of /proc/stat and /proc/meminfo read at ``now``
    (wall clock), ``before`` the CPU times of the previous read."""
    sizes = meminfo(mem)
    total = sizes["MemTotal"]
    # MemAvailable came in Linux 3.14; before it, what psutil's estimate starts from
    available = sizes.get("MemAvailable",
                          sizes.get("MemFree", 0) + sizes.get("Buffers", 0) + sizes.get("Cached", 0))
    swap_total = sizes.get("SwapTotal", 0)
    return HostFacts(cpu_pct=busy_pct(before, cpu_times(stat)), load=load,
                     mem_used=total - available, mem_total=total,
                     swap_used=swap_total - sizes.get("SwapFree", swap_total),
                     swap_total=swap_total, uptime_s=max(0.0, now - boot_time(stat)))


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as fh:
        return fh.read()


class HostReader:
    """Reads HostFacts no more often than ``min_gap_s``; None in between, and where /proc
    cannot be read (no host line rather than a made-up one)."""

    def __init__(self, min_gap_s: float = 1.0, proc: str = "/proc") -> None:
        self.min_gap_s = min_gap_s
        self.proc = proc
        self._last: float | None = None
        try:  # the first read's CPU % counts from here
            self._cpu: tuple[int, ...] | None = cpu_times(_read(f"{proc}/stat"))
        except (OSError, ValueError):
            self._cpu = None

    def due(self) -> HostFacts | None:
        now = time.monotonic()
        if self._last is not None and now - self._last < self.min_gap_s:
            return None
        self._last = now
        return self.read()

    def read(self) -> HostFacts | None:
        try:
            stat, mem = _read(f"{self.proc}/stat"), _read(f"{self.proc}/meminfo")
            cpu = cpu_times(stat)
            try:
                load: tuple[float, float, float] | None = os.getloadavg()
            except OSError:
                load = None
            read = facts(stat, mem, self._cpu or cpu, load, time.time())
        except (OSError, ValueError, KeyError, IndexError):
            return None
        self._cpu = cpu
        return read
