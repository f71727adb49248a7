"""Pure parsers of amdgpu's own sysfs values: DPM clock tables, its hwmon sensors' labels.

No file is opened here: each function takes the text (or the numbers) read, so that each rule is
tested on the captured values alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

# A pp_dpm_* line: "1: 2605Mhz *" (the current level starred), "0: 255Mhz", "S: 19Mhz *" (an
# APU's sleep level). Older kernels print "Mhz", some "MHz".
_DPM_LINE = re.compile(r"^\s*\w+:\s*(\d+)\s*[Mm][Hh]z\s*(\*)?\s*$")

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
