"""Rates of the kernel's cumulative counters between two readings: engine time over wall time
(a process's share of an engine), busy cycles over total cycles, energy over time (power),
idle residency over time.

The kernel lets a counter go back briefly ("stay with the larger previous value until a
monotonic update is seen", Documentation/gpu/drm-usage-stats.rst), so a lower reading keeps the
larger one. A counter first seen has no rate yet (None), never 0.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

NS_PER_S = 1e9
MS_PER_S = 1e3


class Rates:
    """Δcounter / Δclock per key, from the last reading of each key."""

    def __init__(self) -> None:
        self._last: dict[Hashable, tuple[float, float]] = {}

    def rate(self, key: Hashable, counter: float | None, clock: float | None) -> float | None:
        """The counter's rate since the key's last reading, in counter units per clock unit;
        None for a first reading, a missing counter or a clock that did not advance."""
        if counter is None or clock is None:
            self._last.pop(key, None)
            return None
        last = self._last.get(key)
        if last is None:
            self._last[key] = (counter, clock)
            return None
        then_counter, then = last
        if clock <= then:
            return None
        counter = max(counter, then_counter)
        self._last[key] = (counter, clock)
        return (counter - then_counter) / (clock - then)

    def prune(self, live: Iterable[Hashable]) -> None:
        """Forget the keys not in ``live`` (processes gone, cards lost)."""
        keep = set(live)
        for key in [k for k in self._last if k not in keep]:
            del self._last[key]


def percent(rate: float | None) -> float | None:
    """A rate of 0..1 as a percentage to one decimal, capped at 100 (several engines of one
    class, or two readings a hair apart, can count more than the wall time)."""
    return round(min(100.0, 100.0 * rate), 1) if rate is not None else None
