"""Parse the per-chip `npu-smi info -t` queries: usages, common, power, memory, temp, health
and board."""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.backends.npu_smi.kv import KvPair, chip_fields, kv_float, kv_int, kv_str
from gputop.backends.npu_smi.syntax import BUS_ID, HEALTH_WORD, NpuSmiParseError


@dataclass(frozen=True, slots=True)
class Usages:
    """`npu-smi info -t usages`: percentages are 0-100, capacities in MB (MiB)."""

    npu_id: int | None
    chip_id: int | None
    ddr_capacity_mb: int | None
    ddr_usage_pct: int | None
    hbm_capacity_mb: int | None
    hbm_usage_pct: int | None
    aicore_pct: int | None
    aivector_pct: int | None
    aicpu_pct: int | None
    ctrlcpu_pct: int | None
    ddr_bandwidth_pct: int | None
    hbm_bandwidth_pct: int | None
    npu_util_pct: int | None
    aicube_pct: int | None


def parse_usages(text: str, chip_id: int | None = None) -> Usages:
    f = chip_fields(text, chip_id)
    return Usages(
        npu_id=kv_int(f, "npu id"),
        chip_id=kv_int(f, "chip id"),
        ddr_capacity_mb=kv_int(f, "ddr capacity(mb)"),
        ddr_usage_pct=kv_int(f, "ddr usage rate(%)"),
        hbm_capacity_mb=kv_int(f, "hbm capacity(mb)"),
        hbm_usage_pct=kv_int(f, "hbm usage rate(%)"),
        aicore_pct=kv_int(f, "aicore usage rate(%)"),
        aivector_pct=kv_int(f, "aivector usage rate(%)"),
        aicpu_pct=kv_int(f, "aicpu usage rate(%)"),
        ctrlcpu_pct=kv_int(f, "ctrlcpu usage rate(%)"),
        ddr_bandwidth_pct=kv_int(f, "ddr bandwidth usage rate(%)"),
        hbm_bandwidth_pct=kv_int(f, "hbm bandwidth usage rate(%)"),
        npu_util_pct=kv_int(f, "npu utilization(%)"),
        aicube_pct=kv_int(f, "aicube usage rate(%)"),
    )


@dataclass(frozen=True, slots=True)
class Common:
    """`npu-smi info -t common`."""

    npu_id: int | None
    chip_id: int | None
    memory_usage_pct: int | None
    hbm_usage_pct: int | None
    aicore_pct: int | None
    aicore_freq_mhz: int | None  # rated
    aicore_cur_freq_mhz: int | None
    aicore_count: int | None
    temperature_c: int | None
    power_w: float | None


def parse_common(text: str, chip_id: int | None = None) -> Common:
    f = chip_fields(text, chip_id)
    return Common(
        npu_id=kv_int(f, "npu id"),
        chip_id=kv_int(f, "chip id"),
        memory_usage_pct=kv_int(f, "memory usage rate(%)"),
        hbm_usage_pct=kv_int(f, "hbm usage rate(%)"),
        aicore_pct=kv_int(f, "aicore usage rate(%)"),
        aicore_freq_mhz=kv_int(f, "aicore freq(mhz)"),
        aicore_cur_freq_mhz=kv_int(f, "aicore curfreq(mhz)"),
        aicore_count=kv_int(f, "aicore count"),
        temperature_c=kv_int(f, "temperature(c)"),
        power_w=_power_field(f),
    )


def _power_field(f: dict[str, KvPair]) -> float | None:
    for key in ("npu real-time power(w)", "real-time power(w)", "power dissipation(w)"):
        if key in f:
            return kv_float(f, key)
    return None


@dataclass(frozen=True, slots=True)
class Power:
    npu_id: int | None
    chip_id: int | None
    power_w: float | None


def parse_power(text: str, chip_id: int | None = None) -> Power:
    f = chip_fields(text, chip_id)
    if not any("power" in k and "(w)" in k for k in f):
        raise NpuSmiParseError("no power reading in `-t power` output")
    return Power(kv_int(f, "npu id"), kv_int(f, "chip id"), _power_field(f))


@dataclass(frozen=True, slots=True)
class Memory:
    """`npu-smi info -t memory`."""

    npu_id: int | None
    chip_id: int | None
    ddr_capacity_mb: int | None
    ddr_clock_mhz: int | None
    hbm_capacity_mb: int | None
    hbm_clock_mhz: int | None
    hbm_temperature_c: int | None
    hbm_manufacturer_id: str | None


def parse_memory(text: str, chip_id: int | None = None) -> Memory:
    f = chip_fields(text, chip_id)
    return Memory(
        npu_id=kv_int(f, "npu id"),
        chip_id=kv_int(f, "chip id"),
        ddr_capacity_mb=kv_int(f, "ddr capacity(mb)"),
        ddr_clock_mhz=kv_int(f, "ddr clock speed(mhz)"),
        hbm_capacity_mb=kv_int(f, "hbm capacity(mb)"),
        hbm_clock_mhz=kv_int(f, "hbm clock speed(mhz)"),
        hbm_temperature_c=kv_int(f, "hbm temperature(c)"),
        hbm_manufacturer_id=kv_str(f, "hbm manufacturer id"),
    )


@dataclass(frozen=True, slots=True)
class Temp:
    npu_id: int | None
    chip_id: int | None
    temperature_c: int | None


def parse_temp(text: str, chip_id: int | None = None) -> Temp:
    f = chip_fields(text, chip_id)
    if "temperature(c)" not in f:
        raise NpuSmiParseError("no temperature in `-t temp` output")
    return Temp(kv_int(f, "npu id"), kv_int(f, "chip id"), kv_int(f, "temperature(c)"))


@dataclass(frozen=True, slots=True)
class Health:
    npu_id: int | None
    chip_id: int | None
    health: str | None
    error_code: str | None
    error_information: str | None


def parse_health(text: str, chip_id: int | None = None) -> Health:
    f = chip_fields(text, chip_id)
    if "health" not in f:
        raise NpuSmiParseError("no 'Health' in `-t health` output")
    health = kv_str(f, "health")
    if health is not None and not HEALTH_WORD.fullmatch(health):
        pair = f["health"]
        raise NpuSmiParseError("health is not a word", pair.line, pair.value)
    return Health(
        npu_id=kv_int(f, "npu id"),
        chip_id=kv_int(f, "chip id"),
        health=health,
        error_code=kv_str(f, "error code"),
        error_information=kv_str(f, "error information"),
    )


@dataclass(frozen=True, slots=True)
class Board:
    """`npu-smi info -t board` (the fields gputop uses, plus all of them as ``fields``)."""

    npu_id: int | None
    chip_id: int | None
    product_name: str | None
    serial_number: str | None
    firmware_version: str | None
    software_version: str | None
    pci_bus_id: str | None
    chip_name: str | None
    fields: dict[str, str] = field(default_factory=dict)


def parse_board(text: str, chip_id: int | None = None) -> Board:
    f = chip_fields(text, chip_id)
    bus = kv_str(f, "pcie bus info")
    if bus is not None and not BUS_ID.fullmatch(bus):
        pair = f["pcie bus info"]
        raise NpuSmiParseError("PCIe Bus Info is not a PCI address", pair.line, pair.value)
    return Board(
        npu_id=kv_int(f, "npu id"),
        chip_id=kv_int(f, "chip id"),
        product_name=kv_str(f, "product name"),
        serial_number=kv_str(f, "serial number"),
        firmware_version=kv_str(f, "firmware version"),
        software_version=kv_str(f, "software version"),
        pci_bus_id=bus.upper() if bus else None,
        chip_name=kv_str(f, "chip name"),
        fields={p.key: p.value for p in f.values()},
    )
