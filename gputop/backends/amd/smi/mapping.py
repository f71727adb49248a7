"""Pure mappings of one GPU's object in `amd-smi static/metric/process --json` onto the model.

Each function takes the parsed object of one GPU and returns what it holds as Device attributes
(a value amd-smi prints as "N/A", or as its library's error, is None, never 0). Which of these
keys are checked against a captured output and which follow amd-smi's source alone is said in
docs/backends.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gputop.backends.amd import values
from gputop.backends.amd.smi.output import (
    CELSIUS,
    GT_S,
    JOULES,
    MEBIBYTES,
    MHZ,
    NANOSECONDS,
    PERCENT,
    WATTS,
    dig,
    hex_id,
    integer,
    quantity,
    text,
)
from gputop.backends.drm import units
from gputop.core import untrusted

ENABLED, DISABLED = "ENABLED", "DISABLED"


def gpu_index(gpu: Mapping[str, Any]) -> int | None:
    """The GPU's index, the key that ties its `static`, `metric` and `process` objects."""
    return integer(gpu.get("gpu"))


def _generation(speed: Any) -> int | None:
    gts = quantity(speed, GT_S)
    return units.PCIE_GENERATIONS.get(gts) if gts is not None else None


def _levels_max(clock: Any) -> float | None:
    """The highest of a clock's DPM levels ({"Level 0": "132 MHz", …})."""
    levels = dig(clock, "frequency_levels")
    if not isinstance(levels, Mapping):
        return None
    found = [q for q in (quantity(v, MHZ) for v in levels.values()) if q is not None]
    return max(found) if found else None


def _packed(device: Any, vendor: Any) -> int | None:
    """A PCI id as NVML packs it: device id << 16 | vendor id."""
    dev, ven = hex_id(device), hex_id(vendor)
    return dev << 16 | ven if dev is not None and ven is not None else None


def _first(*found: float | None) -> float | None:
    return next((v for v in found if v is not None), None)


def _limit(limit: Any, ppt0_key: str, old_key: str) -> float | None:
    """A power limit: under ``ppt0`` in amd-smi 26, at the top of ``limit`` before it."""
    return _first(quantity(dig(limit, "ppt0", ppt0_key), WATTS),
                  quantity(dig(limit, old_key), WATTS))


def _edge_else_hotspot(limit: Any, kind: str) -> float | None:
    """A temperature threshold of the GPU: the edge sensor's, else the hotspot's (as the GPU's
    temperature is; MI300 has no edge sensor)."""
    return _first(quantity(dig(limit, f"{kind}_edge_temperature"), CELSIUS),
                  quantity(dig(limit, f"{kind}_hotspot_temperature"), CELSIUS))


def _ecc_mode(ras: Any) -> bool | None:
    """Whether the memory (UMC) ECC is on, from `static`'s RAS block states."""
    state = dig(ras, "ecc_block_state", "UMC")
    return {ENABLED: True, DISABLED: False}.get(state) if isinstance(state, str) else None


@dataclass(frozen=True)
class StaticGpu:
    """What `amd-smi static --json` says of one GPU: its identity and the facts read once."""

    index: int
    name: str | None
    bus_id: str | None
    driver_version: str | None
    attrs: dict[str, Any]


def static_gpu(gpu: Mapping[str, Any]) -> StaticGpu | None:
    """One GPU of `amd-smi static --json`; None where it has no index."""
    index = gpu_index(gpu)
    if index is None:
        return None
    asic, bus, limit = gpu.get("asic"), gpu.get("bus"), gpu.get("limit")
    sys_clock, mem_clock = dig(gpu, "clock", "sys"), dig(gpu, "clock", "mem")
    firmware = gpu.get("ifwi") if isinstance(gpu.get("ifwi"), Mapping) else gpu.get("vbios")
    attrs = {
        "memory_total_mib": quantity(dig(gpu, "vram", "size"), MEBIBYTES),
        "power_limit_w": _limit(limit, "socket_power_limit", "socket_power"),
        "power_limit_min_w": _limit(limit, "min_power_limit", "min_power"),
        "power_limit_max_w": _limit(limit, "max_power_limit", "max_power"),
        "temperature_slowdown_c": _edge_else_hotspot(limit, "slowdown"),
        "temperature_shutdown_c": _edge_else_hotspot(limit, "shutdown"),
        "temperature_memory_max_c": quantity(dig(limit, "slowdown_vram_temperature"), CELSIUS),
        "clock_sm_max_mhz": _levels_max(sys_clock),
        "clock_mem_max_mhz": _levels_max(mem_clock),
        "pcie_gen_max": _generation(dig(bus, "max_pcie_speed")),
        "pcie_width_max": integer(dig(bus, "max_pcie_width")),
        "ecc_mode": _ecc_mode(gpu.get("ras")),
        "serial": text(dig(gpu, "board", "product_serial")),
        "vbios_version": text(dig(firmware, "version")),
        "pci_device_id": _packed(dig(asic, "device_id"), dig(asic, "vendor_id")),
        "pci_sub_device_id": _packed(dig(asic, "subsystem_id"), dig(asic, "subvendor_id")),
    }
    name = text(dig(asic, "market_name")) or text(dig(gpu, "board", "product_name"))
    bdf = text(dig(bus, "bdf"))
    return StaticGpu(index, name, bdf.lower() if bdf else None,
                     text(dig(gpu, "driver", "version")), attrs)


def metric_gpu(gpu: Mapping[str, Any]) -> dict[str, Any]:
    """The readings of one GPU of `amd-smi metric --json`, as Device attributes."""
    temp = gpu.get("temperature")
    temps = values.temperatures({
        "edge": quantity(dig(temp, "edge"), CELSIUS),
        "hotspot": quantity(dig(temp, "hotspot"), CELSIUS),
        "mem": quantity(dig(temp, "mem"), CELSIUS),
    })
    mem = gpu.get("mem_usage")
    return {
        "utilization_gpu_pct": quantity(dig(gpu, "usage", "gfx_activity"), PERCENT),
        # the memory controllers' (UMC) activity: what NVML's memory utilization measures
        "utilization_memory_pct": quantity(dig(gpu, "usage", "umc_activity"), PERCENT),
        "power_draw_w": quantity(dig(gpu, "power", "socket_power"), WATTS),
        "temperature_c": temps.gpu_c,
        "temperature_hotspot_c": temps.hotspot_c,
        "temperature_memory_c": temps.memory_c,
        "clock_sm_mhz": quantity(dig(gpu, "clock", "gfx_0", "clk"), MHZ),
        "clock_mem_mhz": quantity(dig(gpu, "clock", "mem_0", "clk"), MHZ),
        "pcie_gen": _generation(dig(gpu, "pcie", "speed")),
        "pcie_width": integer(dig(gpu, "pcie", "width")),
        "pcie_replay_count": integer(dig(gpu, "pcie", "replay_count")),
        # counted by the driver's RAS since it loaded: nvidia-smi's "volatile"
        "ecc_errors_corrected_volatile": integer(dig(gpu, "ecc", "total_correctable_count")),
        "ecc_errors_uncorrected_volatile": integer(dig(gpu, "ecc", "total_uncorrectable_count")),
        "memory_used_mib": quantity(dig(mem, "used_vram"), MEBIBYTES),
        "memory_gtt_total_mib": quantity(dig(mem, "total_gtt"), MEBIBYTES),
        "memory_gtt_used_mib": quantity(dig(mem, "used_gtt"), MEBIBYTES),
        "fan_pct": quantity(dig(gpu, "fan", "usage"), PERCENT),
        "energy_j": quantity(dig(gpu, "energy", "total_energy_consumption"), JOULES),
    }


# The Device attributes `metric` fills (the budget reads this to know when to ask for it).
METRIC_ATTRS = frozenset(metric_gpu({}))


@dataclass(frozen=True)
class ToolProcess:
    """One process as `amd-smi process --json` lists it under one GPU."""

    pid: int
    name: str | None
    vram_mib: float | None
    gfx_ns: int | None  # the graphics engine's time on this GPU, a counter


def processes(gpu: Mapping[str, Any]) -> list[ToolProcess]:
    """The processes of one GPU of `amd-smi process --json`; a GPU with none lists
    ``"process_info": "N/A"`` (or "No running processes detected"), skipped."""
    found = gpu.get("process_list")
    if not isinstance(found, list):
        found = [{"process_info": v} for k, v in gpu.items() if k.startswith("process_info")]
    out = []
    for item in found[:untrusted.MAX_PROCESSES]:
        info = dig(item, "process_info")
        pid = integer(dig(info, "pid"))
        if not isinstance(info, Mapping) or pid is None or pid <= 0:
            continue
        name = text(info.get("name"))
        ns = quantity(dig(info, "usage", "gfx"), NANOSECONDS)
        out.append(ToolProcess(
            pid=pid,
            name=os.path.basename(name) if name else None,
            vram_mib=quantity(dig(info, "memory_usage", "vram_mem"), MEBIBYTES),
            gfx_ns=int(ns) if ns is not None else None,
        ))
    return out


@dataclass(frozen=True)
class Version:
    """What `amd-smi version --json` says: the tool's, ROCm's and the driver's versions."""

    tool: str | None
    rocm: str | None
    amdgpu: str | None


def version(entries: tuple[Mapping[str, Any], ...]) -> Version:
    """The first entry of `amd-smi version --json` (a one-element list)."""
    first = entries[0] if entries else {}
    return Version(text(first.get("version")), text(first.get("rocm_version")),
                   text(first.get("amdgpu_version")))
