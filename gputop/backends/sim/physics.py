"""The simulator's physics, as pure functions.

Dynamic power grows steeply with the SM clock while voltage scales with it (P ~ f^4.9 above
the voltage floor), then only linearly below it. Fitted so that a compute-bound job capped at
80% of its power runs about 5% slower, at 67% about 10%, with a steep knee near 50%, as
published power-capping traces of V100/A100/H100 show.
"""

from __future__ import annotations

import functools
import math

EXPONENT = 4.9
VOLTAGE_FLOOR = 0.85  # fraction of the max SM clock below which voltage stops falling
_FLOOR_POWER = VOLTAGE_FLOOR**EXPONENT
MIN_CLOCK_FRACTION = 0.2


def dynamic_power_fraction(clock_fraction: float) -> float:
    """Dynamic power at a clock, as a fraction of the dynamic power at the max clock."""
    x = max(0.0, clock_fraction)
    if x >= VOLTAGE_FLOOR:
        return x**EXPONENT
    return _FLOOR_POWER * x / VOLTAGE_FLOOR


def clock_for_power(dynamic_fraction: float) -> float:
    """Inverse of dynamic_power_fraction: the highest clock fraction within that dynamic power."""
    if dynamic_fraction >= 1.0:
        return 1.0
    if dynamic_fraction >= _FLOOR_POWER:
        return dynamic_fraction ** (1.0 / EXPONENT)
    return max(MIN_CLOCK_FRACTION, VOLTAGE_FLOOR * dynamic_fraction / _FLOOR_POWER)


def capped_clock(limit_w: float, idle_w: float, dynamic_w: float, intensity: float) -> float:
    """Clock fraction a power limit allows while a job of ``intensity`` (0..1) computes."""
    need = dynamic_w * intensity
    if need <= 0:
        return 1.0
    return clock_for_power((limit_w - idle_w) / need)


def power_draw(idle_w: float, dynamic_w: float, intensity: float, clock_fraction: float) -> float:
    return idle_w + dynamic_w * intensity * dynamic_power_fraction(clock_fraction)


def relative_speed(clock_fraction: float, memory_bound: float) -> float:
    """Throughput relative to the max clock. A memory-bound share waits on DRAM, not the clock."""
    m = min(max(memory_bound, 0.0), 1.0)
    x = max(clock_fraction, 1e-6)
    return 1.0 / ((1.0 - m) / x + m)


def settle(value: float, target: float, dt: float, tau: float) -> float:
    """First-order lag of ``value`` toward ``target`` over ``dt`` with time constant ``tau``."""
    if tau <= 0:
        return target
    return target + (value - target) * math.exp(-dt / tau)


@functools.lru_cache(maxsize=8192)  # pure; a fast sampler asks for each 100 ms slot's noise often
def mix64(*keys: int) -> float:
    """A deterministic value in [0, 1) from integer keys (splitmix64): noise without state."""
    z = 0x9E3779B97F4A7C15
    for k in keys:
        z = (z + (k & 0xFFFFFFFFFFFFFFFF) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        z ^= z >> 31
    return z / 2**64
