"""The i915 and xe clients of a process, from the DRM usage stats in ``/proc/PID/fdinfo``.

Beside the common keys (gputop.backends.drm.fdinfo), the kernel's
Documentation/gpu/drm-usage-stats.rst has each driver print:

- i915: the time each engine class spent on the client's work, ``drm-engine-render: <n> ns``
  (classes ``render``, ``copy``, ``video``, ``video-enhance``, ``compute``);
- xe: busy GPU cycles per engine class, ``drm-cycles-rcs: <n>``, beside the cycles the GT's
  timestamp counted meanwhile, ``drm-total-cycles-rcs: <n>`` (classes ``rcs`` render, ``bcs``
  copy, ``vcs`` video, ``vecs`` video enhance, ``ccs`` compute): a share is Δcycles / Δtotal
  cycles, with no wall clock involved;
- both: memory per region, ``drm-resident-<region>`` (and the older ``drm-memory-<region>``) and
  ``drm-total-<region>``, where the card's own memory is ``local0`` (i915) or ``vram0`` (xe).

A class of several engines says how many (``drm-engine-capacity-ccs: 4``): its busy time or
cycles count each engine's, so a share divides by the capacity (1 where none is printed).

A process's share of the GPU (its SM% column) counts the render and compute engines, as the
AMD backend counts gfx and compute. The xe rules are tested on the kernel's own example text
(xe_drm_client.c); no i915 fdinfo text with a citable source was found, so i915's are tested on
numbers alone (tests/fixtures/intel/SOURCES.md).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from gputop.backends.drm.fdinfo import count, engines, nanoseconds, parse_pairs, size_bytes
from gputop.backends.drm.rates import NS_PER_S, Rates, percent

DRIVERS = ("i915", "xe")
BUSY_ENGINES = ("render", "compute")  # i915's classes
BUSY_CYCLES = ("rcs", "ccs")  # xe's
# The card's own memory, by the region names each driver prints, resident before total (a
# buffer may be placed in VRAM yet sit in system memory for now).
LOCAL_MEMORY_KEYS = ("drm-resident-local0", "drm-memory-local0", "drm-resident-vram0",
                     "drm-memory-vram0", "drm-total-local0", "drm-total-vram0")


@dataclass(frozen=True)
class Client:
    """One DRM file of the i915 or xe driver, as its fdinfo describes it."""

    pdev: str | None
    client_id: str | None
    local_bytes: int | None
    engine_ns: dict[str, int] = field(default_factory=dict)  # i915
    cycles: dict[str, int] = field(default_factory=dict)  # xe
    total_cycles: dict[str, int] = field(default_factory=dict)  # xe
    capacity: dict[str, int] = field(default_factory=dict)  # engines per class, where > 1


def parse_client(text: str) -> Client | None:
    """The i915 or xe client an fdinfo file describes; None for any other file or driver."""
    pairs = parse_pairs(text)
    if pairs.get("drm-driver") not in DRIVERS:
        return None
    local = next((size_bytes(pairs[k]) for k in LOCAL_MEMORY_KEYS if k in pairs), None)
    return Client(pdev=pairs.get("drm-pdev"), client_id=pairs.get("drm-client-id"),
                  local_bytes=local,
                  engine_ns=engines(pairs, "drm-engine-", nanoseconds),
                  cycles=engines(pairs, "drm-cycles-", count),
                  total_cycles=engines(pairs, "drm-total-cycles-", count),
                  capacity=engines(pairs, "drm-engine-capacity-", count))


@dataclass
class Usage:
    """What one process holds on one card, summed over its clients: local memory, busy engine
    time (i915), busy cycles per engine (xe) with the GT's cycle count (the same clock for every
    client of a GT, so the largest reading, not a sum)."""

    local_bytes: int | None = None
    busy_ns: float | None = None  # engine time over each class's capacity
    cycles: dict[str, float] = field(default_factory=dict)  # the same
    total_cycles: dict[str, int] = field(default_factory=dict)

    def add(self, client: Client) -> None:
        if client.local_bytes is not None:
            self.local_bytes = (self.local_bytes or 0) + client.local_bytes
        busy = [client.engine_ns[e] / client.capacity.get(e, 1) for e in BUSY_ENGINES
                if e in client.engine_ns]
        if busy:
            self.busy_ns = (self.busy_ns or 0) + sum(busy)
        for engine in BUSY_CYCLES:
            if engine in client.cycles and engine in client.total_cycles:
                self.cycles[engine] = (self.cycles.get(engine, 0)
                                       + client.cycles[engine] / client.capacity.get(engine, 1))
                self.total_cycles[engine] = max(self.total_cycles.get(engine, 0),
                                                client.total_cycles[engine])


def usage(clients: list[Client]) -> Usage:
    """One process's clients on one card, summed."""
    out = Usage()
    for client in clients:
        out.add(client)
    return out


def rate_keys(key: tuple[Hashable, ...]) -> list[tuple[Hashable, ...]]:
    """The keys `busy_pct` keeps readings under for one process (to prune the others)."""
    return [key, *((*key, engine) for engine in BUSY_CYCLES)]


def busy_pct(rates: Rates, key: tuple[Hashable, ...], use: Usage, now_s: float) -> float | None:
    """The process's share of the render and compute engines since its last reading: xe's
    Δcycles / Δtotal cycles per engine, summed; else i915's Δbusy ns / Δwall ns. None on the
    first reading or where the driver prints neither."""
    if use.cycles:
        parts = [rates.rate((*key, e), use.cycles[e], use.total_cycles[e]) for e in BUSY_CYCLES
                 if e in use.cycles]
        known = [p for p in parts if p is not None]
        return percent(sum(known)) if known else None
    return percent(rates.rate(key, use.busy_ns, now_s * NS_PER_S))
