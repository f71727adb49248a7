"""From parsed npu-smi records to the model: pure functions, no subprocess, no clock.

Units: npu-smi labels memory "MB", but its figures are binary megabytes (HBM totals of 32768,
65536 and 131072 are the 32, 64 and 128 GiB parts, DDR 8192 is an 8 GiB card): they are taken as
MiB as they stand, without conversion, into the model's ``*_mib`` fields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import cast

from gputop.backends.npu_smi.chip_info import Board, Common, Health, Memory, Power, Temp, Usages
from gputop.backends.npu_smi.proc_mem import ProcMem
from gputop.backends.npu_smi.table import ChipRow, NpuTable
from gputop.core.model import Device, Hint, Process
from gputop.host.attribution import NO_OWNER, Owner

ChipKey = tuple[int, int]  # (NPU id, chip id); the 950 layout's single chip is chip 0
VENDOR = "huawei"

# health -> (device status, hint severity). Warning and Alarm are npu-smi's minor and major
# alarms: the chip still computes (an Orange Pi's 310B reads Alarm in normal use), so it stays
# "ok" with its reason and a hint. Critical means the chip needs action now: "error". UNKNOWN:
# npu-smi could not read the health, which is itself worth a warning but not a verdict.
HEALTH_MAP: dict[str, tuple[str, str | None]] = {
    "OK": ("ok", None),
    "Warning": ("ok", "warning"),
    "Alarm": ("ok", "critical"),
    "Critical": ("error", "critical"),
    "UNKNOWN": ("ok", "warning"),
}


def chip_key(chip: ChipRow) -> ChipKey:
    return (chip.npu_id, chip.chip_id if chip.chip_id is not None else 0)


def assign_indices(chips: Iterable[ChipRow]) -> dict[ChipKey, int]:
    """Device index for each chip, as npu-smi numbers it.

    One chip per NPU (910, 910B, 950, most 310B): the NPU id, which is what `npu-smi info -i N`
    takes. Several chips per NPU (310 cards, A3): the device number the table prints for the chip
    (310 ``Device``: the logic id the runtime uses; A3 ``Phy-ID``). Should those ever collide,
    the chips are numbered in table order instead, so that an index is never ambiguous.
    """
    chips = list(chips)
    per_npu: dict[int, int] = {}
    for c in chips:
        per_npu[c.npu_id] = per_npu.get(c.npu_id, 0) + 1
    multi = any(n > 1 for n in per_npu.values())
    wanted: list[int | None] = []
    for c in chips:
        if not multi:
            wanted.append(c.npu_id)
        elif c.device_id is not None:
            wanted.append(c.device_id)
        else:
            wanted.append(c.phy_id)
    keys = [chip_key(c) for c in chips]
    if None in wanted or len(set(wanted)) != len(wanted) or len(set(keys)) != len(keys):
        return {k: i for i, k in enumerate(dict.fromkeys(keys))}
    return {k: w for k, w in zip(keys, wanted, strict=True) if w is not None}


def display_name(name: str | None) -> str | None:
    """``910B4`` -> ``Ascend 910B4``, as `npu-smi info -m` names the same chip."""
    if not name:
        return None
    return name if name.lower().startswith("ascend") else f"Ascend {name}"


def chip_memory(chip: ChipRow) -> tuple[int | None, int | None]:
    """(used, total) MiB: HBM where the chip has it, else DDR; None where neither is reported.

    Decided by the figures, not the name: on the 910B generation Memory-Usage reads ``0 / 0``
    and HBM holds the real usage, while a first-generation 910 (which may be named ``910B``)
    reports both, and its HBM is the memory jobs use.
    """
    if chip.hbm_total_mb:
        return chip.hbm_used_mb, chip.hbm_total_mb
    if chip.memory_total_mb:
        return chip.memory_used_mb, chip.memory_total_mb
    return None, None


@dataclass(frozen=True, slots=True)
class Enrichment:
    """What the slower `npu-smi info -t …` queries said about one chip (any may be missing)."""

    usages: Usages | None = None
    common: Common | None = None
    memory: Memory | None = None
    health: Health | None = None
    board: Board | None = None
    power: Power | None = None
    temp: Temp | None = None
    proc_mem: tuple[ProcMem, ...] | None = None


HostFacts = Callable[[int, str | None], Mapping[str, object] | None]


def table_processes(table: NpuTable) -> dict[ChipKey, list[tuple[int, str | None, int | None]]]:
    """(pid, name, memory MiB) per chip; rows without a chip column go to the NPU's first chip."""
    first_chip: dict[int, int] = {}
    for c in table.chips:
        first_chip.setdefault(c.npu_id, chip_key(c)[1])
    out: dict[ChipKey, list[tuple[int, str | None, int | None]]] = {}
    for p in table.processes:
        chip = p.chip_id if p.chip_id is not None else first_chip.get(p.npu_id, 0)
        out.setdefault((p.npu_id, chip), []).append((p.pid, p.name, p.memory_mb))
    return out


def make_process(pid: int, name: str | None, memory_mb: int | None,
                 host_facts: HostFacts | None) -> Process:
    facts = dict(host_facts(pid, name) or {}) if host_facts is not None else {}
    owner = cast(Owner, facts.get("owner") or NO_OWNER)
    return Process(
        pid=pid,
        name=name if name is not None else facts.get("name"),  # type: ignore[arg-type]
        gpu_memory_mib=float(memory_mb) if memory_mb is not None else None,
        user=facts.get("user"),  # type: ignore[arg-type]
        command=facts.get("command"),  # type: ignore[arg-type]
        cpu_pct=facts.get("cpu_pct"),  # type: ignore[arg-type]
        host_memory_mib=facts.get("host_memory_mib"),  # type: ignore[arg-type]
        started=facts.get("started"),  # type: ignore[arg-type]
        type="C",  # npu-smi lists compute processes only
        container=owner.container,
        job=owner.job,
        namespace_pid=owner.namespace_pid,
    )


def health_reason(health: str, detail: Health | None = None) -> str | None:
    if health == "OK":
        return None
    if health not in HEALTH_MAP:
        text = f"npu-smi health {health!r} (not a state npu-smi documents)"
    elif health == "UNKNOWN":
        text = "npu-smi health UNKNOWN (the driver could not report it)"
    else:
        text = f"npu-smi health {health}"
    if detail is not None and (detail.error_code or detail.error_information):
        parts = [p for p in (detail.error_code, detail.error_information) if p]
        text += f" ({': '.join(parts)})"
    return text


def chip_to_device(
    chip: ChipRow,
    index: int,
    processes: Iterable[Process] = (),
    enrich: Enrichment | None = None,
) -> Device:
    """One chip of the table (plus what the enrichment queries added) as a model Device."""
    e = enrich or Enrichment()
    used, total = chip_memory(chip)
    status, _severity = HEALTH_MAP.get(chip.health, ("error", "critical"))
    reason = health_reason(chip.health, e.health)

    power = chip.power_w
    if power is None and e.power is not None:
        power = e.power.power_w
    temp: float | None = chip.temperature_c
    if temp is None and e.temp is not None:
        temp = e.temp.temperature_c
    bus = chip.bus_id or (e.board.pci_bus_id if e.board is not None else None)

    util_mem = None
    if e.usages is not None:
        # Bandwidth use is what nvidia-smi's utilization.memory means (controller busy), not
        # capacity: HBM's where the chip has HBM, else DDR's.
        util_mem = e.usages.hbm_bandwidth_pct if chip.hbm_total_mb else e.usages.ddr_bandwidth_pct
    clock = clock_max = None
    if e.common is not None:
        clock, clock_max = e.common.aicore_cur_freq_mhz, e.common.aicore_freq_mhz
    mem_clock = mem_temp = None
    if e.memory is not None and chip.hbm_total_mb:
        mem_clock = e.memory.hbm_clock_mhz or None
        mem_temp = e.memory.hbm_temperature_c
    elif e.memory is not None:
        mem_clock = e.memory.ddr_clock_mhz or None

    return Device(
        index=index,
        name=display_name(chip.name),
        vendor=VENDOR,
        pci_bus_id=bus,
        status=status,
        status_reason=reason,
        memory_total_mib=float(total) if total is not None else None,
        memory_used_mib=float(used) if used is not None else None,
        utilization_gpu_pct=float(chip.aicore_pct) if chip.aicore_pct is not None else None,
        utilization_memory_pct=float(util_mem) if util_mem is not None else None,
        temperature_c=float(temp) if temp is not None else None,
        temperature_memory_c=float(mem_temp) if mem_temp is not None else None,
        power_draw_w=power,
        clock_sm_mhz=float(clock) if clock is not None else None,
        clock_sm_max_mhz=float(clock_max) if clock_max is not None else None,
        clock_mem_mhz=float(mem_clock) if mem_clock is not None else None,
        serial=e.board.serial_number if e.board is not None else None,
        vbios_version=e.board.firmware_version if e.board is not None else None,
        processes=tuple(processes),
        npu_id=chip.npu_id,
        chip_id=chip.chip_id,
    )


def table_devices(
    table: NpuTable,
    indices: Mapping[ChipKey, int] | None = None,
    enrich: Mapping[ChipKey, Enrichment] | None = None,
    host_facts: HostFacts | None = None,
) -> list[Device]:
    """Every chip of a table as a Device (the whole mapping, for `npu-smi info` alone)."""
    indices = indices if indices is not None else assign_indices(table.chips)
    enrich = enrich or {}
    procs = table_processes(table)
    out = []
    next_free = max(indices.values(), default=-1) + 1
    for chip in table.chips:
        key = chip_key(chip)
        index = indices.get(key)
        if index is None:  # a chip that appeared after the first table
            index, next_free = next_free, next_free + 1
        e = enrich.get(key)
        rows = procs.get(key, [])
        if not table.has_process_table and e is not None and e.proc_mem is not None:
            rows = [(p.pid, p.name, p.memory_mb) for p in e.proc_mem]
        plist = [make_process(pid, name, mem, host_facts) for pid, name, mem in rows]
        out.append(chip_to_device(chip, index, plist, e))
    return out


def health_hints(devices: Iterable[Device], health: Mapping[int, str]) -> list[Hint]:
    """A ``device-unhealthy`` hint for each device whose npu-smi health is not OK."""
    hints = []
    for dev in devices:
        state = health.get(dev.index)
        if state is None or state == "OK":
            continue
        _status, severity = HEALTH_MAP.get(state, ("error", "critical"))
        where = f"NPU {dev.npu_id}" + (f" chip {dev.chip_id}" if dev.chip_id is not None else "")
        hints.append(
            Hint(
                device=dev.index,
                code="device-unhealthy",
                severity=severity or "warning",
                message=f"{where}: {dev.status_reason or 'health ' + state}",
                advice=f"`npu-smi info -t health -i {dev.npu_id}` shows its error code",
            )
        )
    return hints
