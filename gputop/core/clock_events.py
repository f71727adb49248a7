"""Clock event (throttle) reasons: NVML's bit mask and the names gputop uses for them."""

from __future__ import annotations

# Bit values of nvmlClocksEventReason* (nvml.h). Names are stable: they appear in gputop/1 JSON.
REASONS: dict[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}

# What a person should read in a badge.
LABELS: dict[str, str] = {
    "gpu_idle": "idle",
    "applications_clocks_setting": "app clocks",
    "sw_power_cap": "power cap",
    "hw_slowdown": "HW slowdown",
    "sync_boost": "sync boost",
    "sw_thermal_slowdown": "thermal",
    "hw_thermal_slowdown": "HW thermal",
    "hw_power_brake_slowdown": "power brake",
    "display_clock_setting": "display clocks",
}

# Reasons that mean the GPU runs slower than it could (idle and sync boost do not).
SLOWDOWNS = frozenset(
    {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
     "hw_power_brake_slowdown"}
)


def decode(mask: int) -> tuple[str, ...]:
    return tuple(name for name, bit in REASONS.items() if mask & bit)


def encode(names: tuple[str, ...] | list[str]) -> int:
    mask = 0
    for name in names:
        mask |= REASONS.get(name, 0)
    return mask
