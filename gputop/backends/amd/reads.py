"""What each sample may read of an amdgpu card, by the Device attributes each read fills.

A read is made only when a consumer wants one of its attributes (gputop.core.budget), so that a
view showing utilization alone opens one file per card per tick. Static facts (name, limits,
maxima, link maxima) are read once when the backend opens (`static`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gputop.backends.amd import values
from gputop.backends.drm import hwmon
from gputop.backends.drm.cards import Card
from gputop.backends.drm.files import Files
from gputop.backends.drm.units import celsius, link_width, mhz, pcie_generation, watts
from gputop.core.units import MIB


def _dev(card: Card, name: str) -> str:
    return os.path.join(card.device, name)


def _mib(count: int | None) -> float | None:
    return count / MIB if count is not None else None


def _busy(files: Files, card: Card) -> dict[str, Any]:
    return {"utilization_gpu_pct": files.integer(_dev(card, "gpu_busy_percent"))}


def _mem_busy(files: Files, card: Card) -> dict[str, Any]:
    return {"utilization_memory_pct": files.integer(_dev(card, "mem_busy_percent"))}


def _vram(files: Files, card: Card) -> dict[str, Any]:
    return {"memory_used_mib": _mib(files.integer(_dev(card, "mem_info_vram_used")))}


def _gtt(files: Files, card: Card) -> dict[str, Any]:
    return {"memory_gtt_used_mib": _mib(files.integer(_dev(card, "mem_info_gtt_used")))}


def _power(files: Files, card: Card) -> dict[str, Any]:
    # power1_average where the SMU averages it, else the instantaneous power1_input, which
    # some cards and kernels print alone
    draw = hwmon.integer(files, card, "power1_average")
    if draw is None:
        draw = hwmon.integer(files, card, "power1_input")
    return {"power_draw_w": watts(draw)}


def _power_cap(files: Files, card: Card) -> dict[str, Any]:
    return {"power_limit_w": watts(hwmon.integer(files, card, "power1_cap"))}


def _temps(files: Files, card: Card) -> dict[str, Any]:
    temps = values.temperatures(
        {label: celsius(v) for label, v in hwmon.labelled(files, card, "temp").items()})
    return {"temperature_c": temps.gpu_c, "temperature_hotspot_c": temps.hotspot_c,
            "temperature_memory_c": temps.memory_c}


def _fan(files: Files, card: Card) -> dict[str, Any]:
    return {"fan_pct": values.fan_percent(hwmon.integer(files, card, "pwm1"),
                                          hwmon.integer(files, card, "pwm1_max"))}


def _clocks(files: Files, card: Card) -> dict[str, Any]:
    """The shader (sclk) and memory (mclk) clocks: hwmon's measured frequency where it has one,
    else the current level of the DPM table."""
    freqs = hwmon.labelled(files, card, "freq")
    out = {}
    for attr, label, table in (("clock_sm_mhz", "sclk", "pp_dpm_sclk"),
                               ("clock_mem_mhz", "mclk", "pp_dpm_mclk")):
        measured = mhz(freqs.get(label))
        if measured is None:
            measured = values.parse_dpm(files.text(_dev(card, table))).current_mhz
        out[attr] = measured
    return out


def _link(files: Files, card: Card) -> dict[str, Any]:
    return {"pcie_gen": pcie_generation(files.text(_dev(card, "current_link_speed"))),
            "pcie_width": link_width(files.integer(_dev(card, "current_link_width")))}


def _replays(files: Files, card: Card) -> dict[str, Any]:
    return {"pcie_replay_count": files.integer(_dev(card, "pcie_replay_count"))}


@dataclass(frozen=True)
class Read:
    attrs: tuple[str, ...]
    make: Callable[[Files, Card], dict[str, Any]]


READS: dict[str, Read] = {
    "busy": Read(("utilization_gpu_pct",), _busy),
    "mem_busy": Read(("utilization_memory_pct",), _mem_busy),
    "vram": Read(("memory_used_mib",), _vram),
    "gtt": Read(("memory_gtt_used_mib",), _gtt),
    "power": Read(("power_draw_w",), _power),
    "power_cap": Read(("power_limit_w",), _power_cap),
    "temps": Read(("temperature_c", "temperature_hotspot_c", "temperature_memory_c"), _temps),
    "fan": Read(("fan_pct",), _fan),
    "clocks": Read(("clock_sm_mhz", "clock_mem_mhz"), _clocks),
    "link": Read(("pcie_gen", "pcie_width"), _link),
    "replays": Read(("pcie_replay_count",), _replays),
}
READ_OF = {attr: name for name, spec in READS.items() for attr in spec.attrs}


def static(files: Files, card: Card) -> dict[str, Any]:
    """The facts read once, as Device attributes (the name is added by the backend)."""
    sclk = values.parse_dpm(files.text(_dev(card, "pp_dpm_sclk")))
    mclk = values.parse_dpm(files.text(_dev(card, "pp_dpm_mclk")))
    pci, sub = card.pci_id, card.subsystem_id
    return {
        "memory_total_mib": _mib(files.integer(_dev(card, "mem_info_vram_total"))),
        "memory_gtt_total_mib": _mib(files.integer(_dev(card, "mem_info_gtt_total"))),
        "power_limit_default_w": watts(hwmon.integer(files, card, "power1_cap_default")),
        "power_limit_min_w": watts(hwmon.integer(files, card, "power1_cap_min")),
        "power_limit_max_w": watts(hwmon.integer(files, card, "power1_cap_max")),
        "clock_sm_max_mhz": sclk.max_mhz,
        "clock_mem_max_mhz": mclk.max_mhz,
        "pcie_gen_max": pcie_generation(files.text(_dev(card, "max_link_speed"))),
        "pcie_width_max": link_width(files.integer(_dev(card, "max_link_width"))),
        "serial": files.text(_dev(card, "unique_id")) or None,
        "vbios_version": files.text(_dev(card, "vbios_version")) or None,
        # as NVML packs them: device id << 16 | vendor id
        "pci_device_id": pci[1] << 16 | pci[0] if pci is not None else None,
        "pci_sub_device_id": sub[1] << 16 | sub[0] if sub is not None else None,
    }


def revision(files: Files, card: Card) -> int | None:
    """The PCI revision ("0xc0"), which with the device id names the product in amdgpu.ids."""
    text = files.text(_dev(card, "revision"))
    try:
        return int(text, 16) if text else None
    except ValueError:
        return None
