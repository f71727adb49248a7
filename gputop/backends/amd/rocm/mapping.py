"""Pure mappings of one card's object in `rocm-smi … --json` onto the model.

Each figure is read from whichever of its keys the card holds: rocm-smi renamed some between
releases (``GPU ID`` → ``Device ID``, ``Card series`` → ``Card Series``, ``GPU memory use (%)``
→ ``GPU Memory Read/Write Activity (%)``), and a value it prints as "N/A" is None, never 0.
Which keys were checked against which capture: docs/backends.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gputop.backends.amd import values
from gputop.backends.amd.names import AMD_VENDOR_ID, product_name
from gputop.backends.amd.rocm.output import (
    clock_mhz,
    count,
    first,
    hex_id,
    number,
    pcie_level,
    text,
)
from gputop.backends.drm import units
from gputop.core.units import MIB

# The keys each figure has had, newest first where they differ.
NAME_KEYS = ("Device Name", "Card Series", "Card series")  # 6.x, 6.x, before
DEVICE_ID_KEYS = ("Device ID", "GPU ID")  # 6.x, before
POWER_KEYS = ("Average Graphics Package Power (W)",
              "Current Socket Graphics Package Power (W)")  # MI300 under ROCm 6 (its source)
POWER_CAP = "Max Graphics Package Power (W)"  # hwmon's power1_cap: the cap in force
# mem_busy_percent, the memory controller's busy share: "GPU memory use (%)" before ROCm 6
# despite its name (rocm_smi.py reads rsmi_dev_memory_busy_percent_get for it); then the
# coarse-grain "Memory Activity" of gpu_metrics where the card has it
MEMORY_BUSY_KEYS = ("GPU Memory Read/Write Activity (%)", "GPU memory use (%)",
                    "Memory Activity")
# "Temperature (Sensor HBM 0) (C)": each HBM stack's sensor, printed by ROCm 4.3
_HBM = re.compile(r"^Temperature \(Sensor HBM \d+\) \(C\)$")


def _mib(value: str | None) -> float | None:
    found = count(value)
    return found / MIB if found is not None else None


def _temperatures(card: Mapping[str, Any]) -> values.Temperatures:
    """The GPU's, hotspot's and memory's temperatures, by the sysfs backend's rule (the edge
    sensor, else the hotspot); the memory's is the memory sensor's, else the hottest HBM stack's
    (ROCm 4.3 prints the stacks' sensors apart)."""
    memory = number(first(card, "Temperature (Sensor memory) (C)"))
    if memory is None:
        stacks = [number(text(v)) for k, v in card.items() if _HBM.match(k)]
        memory = max((t for t in stacks if t is not None), default=None)
    return values.temperatures({
        values.EDGE: number(first(card, "Temperature (Sensor edge) (C)")),
        values.HOTSPOT_LABELS[0]: number(first(card, "Temperature (Sensor junction) (C)")),
        values.MEMORY: memory,
    })


def _generation(level: Any) -> int | None:
    return units.PCIE_GENERATIONS.get(level.gts) if level is not None else None


@dataclass(frozen=True)
class Identity:
    """What does not change while gputop runs: a card's name, address and ids."""

    name: str
    bus_id: str | None
    attrs: dict[str, Any]


def identity(card: Mapping[str, Any]) -> Identity:
    """A card's identity. The name is its own (rocm-smi's product name) where the card holds
    one, else its PCI id ("AMD GPU 1002:73DF"), as the sysfs backend names a card; ROCm 4.3
    prints the vendor's id ("0x1002") under ``Card series``, which is no name."""
    device_id = hex_id(first(card, *DEVICE_ID_KEYS))
    own = first(card, *NAME_KEYS)
    if own is not None and hex_id(own) is not None:
        own = None
    pci_id = (AMD_VENDOR_ID, device_id) if device_id is not None else None
    bus = first(card, "PCI Bus")
    return Identity(
        name=product_name(own, pci_id, None, {}),
        bus_id=bus.lower() if bus else None,
        attrs={
            # rocm-smi lists amdgpu's cards alone: the vendor is AMD's
            "pci_device_id": device_id << 16 | AMD_VENDOR_ID if device_id is not None else None,
            "vbios_version": first(card, "VBIOS version"),
            # the board's serial (its FRU), else the chip's unique id, which the sysfs backend
            # shows as the serial
            "serial": first(card, "Serial Number", "Unique ID"),
        })


def readings(card: Mapping[str, Any]) -> dict[str, Any]:
    """A card's readings, as Device attributes."""
    temps = _temperatures(card)
    link = pcie_level(first(card, "pcie clock level"))
    replays = count(first(card, "PCIe Replay Count"))
    return {
        "utilization_gpu_pct": number(first(card, "GPU use (%)")),
        "utilization_memory_pct": number(first(card, *MEMORY_BUSY_KEYS)),
        "power_draw_w": number(first(card, *POWER_KEYS)),
        "power_limit_w": number(first(card, POWER_CAP)),
        "temperature_c": temps.gpu_c,
        "temperature_hotspot_c": temps.hotspot_c,
        "temperature_memory_c": temps.memory_c,
        "clock_sm_mhz": clock_mhz(first(card, "sclk clock speed:")),
        "clock_mem_mhz": clock_mhz(first(card, "mclk clock speed:")),
        "pcie_gen": _generation(link),
        "pcie_width": units.link_width(link.width) if link is not None else None,
        "pcie_replay_count": replays,
        "memory_total_mib": _mib(first(card, "VRAM Total Memory (B)")),
        "memory_used_mib": _mib(first(card, "VRAM Total Used Memory (B)")),
        "memory_gtt_total_mib": _mib(first(card, "GTT Total Memory (B)")),
        "memory_gtt_used_mib": _mib(first(card, "GTT Total Used Memory (B)")),
        "fan_pct": number(first(card, "Fan speed (%)")),
    }


# The Device attributes a read fills (the budget reads this to know when to run the tool).
READING_ATTRS = frozenset(readings({}))


def driver_version(system: Mapping[str, Any]) -> str | None:
    """The amdgpu driver's version, from the "system" object."""
    return text(system.get("Driver version"))
