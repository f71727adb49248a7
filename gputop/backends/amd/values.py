"""Pure parsers of amdgpu's sysfs values: DPM clock tables, PCIe link speeds, hwmon sensors.

No file is opened here: each function takes the text (or the numbers) read, so that each rule is
tested on the captured values alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

# hwmon's power is in µW, its clocks in Hz and its temperatures in m°C: divided (not multiplied
# by 1e-6, which would print 3.103 W as 3.1029999999999998)
PER_MEGA = 1e6
PER_MILLI = 1e3

# A pp_dpm_* line: "1: 2605Mhz *" (the current level starred), "0: 255Mhz", "S: 19Mhz *" (an
# APU's sleep level). Older kernels print "Mhz", some "MHz".
_DPM_LINE = re.compile(r"^\s*\w+:\s*(\d+)\s*[Mm][Hh]z\s*(\*)?\s*$")
# current_link_speed / max_link_speed: "16.0 GT/s PCIe" (older kernels: "8 GT/s", "2.5 GT/s")
_LINK_SPEED = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s")
# The PCIe generation of each transfer rate (GT/s), as the PCI specifications number them.
PCIE_GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

# hwmon temperature labels the amdgpu driver prints, by what they measure.
EDGE = "edge"
HOTSPOT_LABELS = ("junction", "hotspot")
MEMORY = "mem"


@dataclass(frozen=True)
class DpmTable:
    """One pp_dpm_* table: the current level's clock (None where no line is starred) and the
    highest level's."""

    current_mhz: float | None
    max_mhz: float | None


def parse_dpm(text: str | None) -> DpmTable:
    """A pp_dpm_sclk / pp_dpm_mclk table. Where several lines are starred (a card idling with
    its clock gated prints "0: 0Mhz *" and "1: 0Mhz *"), the first starred one is current."""
    current: float | None = None
    levels: list[float] = []
    for line in (text or "").splitlines():
        m = _DPM_LINE.match(line)
        if m is None:
            continue
        mhz = float(m.group(1))
        levels.append(mhz)
        if m.group(2) and current is None:
            current = mhz
    return DpmTable(current, max(levels) if levels else None)


def pcie_generation(speed: str | None) -> int | None:
    """The generation of a link speed ("16.0 GT/s PCIe" → 4); None where it is not one."""
    m = _LINK_SPEED.match(speed or "")
    return PCIE_GENERATIONS.get(float(m.group(1))) if m else None


def watts(microwatts: int | None) -> float | None:
    return microwatts / PER_MEGA if microwatts is not None else None


def mhz(hertz: int | None) -> float | None:
    return hertz / PER_MEGA if hertz is not None else None


def celsius(millidegrees: int | None) -> float | None:
    return millidegrees / PER_MILLI if millidegrees is not None else None


@dataclass(frozen=True)
class Temperatures:
    gpu_c: float | None  # the edge sensor's, else the hotspot's (MI300 has no edge sensor)
    hotspot_c: float | None
    memory_c: float | None


def temperatures(by_label: Mapping[str, float | None]) -> Temperatures:
    """The temperatures a hwmon folder gives, from ``{label: °C}`` (labels lower case; an
    unlabelled sensor is keyed by its file stem, "temp1")."""
    hotspot = next((by_label[k] for k in HOTSPOT_LABELS if by_label.get(k) is not None), None)
    edge = by_label.get(EDGE)
    if edge is None and not any(k in by_label for k in (EDGE, *HOTSPOT_LABELS, MEMORY)):
        edge = by_label.get("temp1")  # a hwmon without labels: its first sensor is the GPU's
    return Temperatures(gpu_c=edge if edge is not None else hotspot, hotspot_c=hotspot,
                        memory_c=by_label.get(MEMORY))


def fan_percent(pwm: int | None, pwm_max: int | None) -> float | None:
    """The fan's duty cycle as a percentage of its PWM range (what nvidia-smi's fan % is)."""
    if pwm is None or not pwm_max:
        return None
    return round(100.0 * pwm / pwm_max, 1)
