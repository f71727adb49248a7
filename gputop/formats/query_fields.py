"""nvidia-smi's query fields: names, aliases, unit tags, and where gputop's model holds each value.

The name lists are nvidia-smi's own (`--help-query-gpu` of drivers 580.173.02 and 590.48.01, and
`--help-query-compute-apps`); unit tags and value formats follow real CSV captures byte for byte
(tests/fixtures/nvidia-smi/csv_*.csv). A field whose value gputop's model does not hold prints what
nvidia-smi prints for an unavailable value: ``[N/A]`` (or, for the fields recent drivers retired,
``[Requested functionality has been deprecated]``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gputop.core import budget
from gputop.core.clock_events import REASONS
from gputop.core.model import MIG_MODES, Device, Snapshot
from gputop.core.untrusted import parse_float, parse_int

NA = "[N/A]"
DEPRECATED = "[Requested functionality has been deprecated]"
# What nvidia-smi prints in place of a value when the device itself failed (nvmlErrorString).
STATUS_TEXT = {"lost": "[GPU is lost]", "error": "[Unknown Error]"}

# Every --query-gpu field in nvidia-smi's order: "canonical [unit tag] | aliases".
_GPU_TABLE = """
    timestamp
    driver_version
    vgpu_driver_capability.heterogenous_multivGPU
    count
    name | gpu_name
    serial | gpu_serial
    uuid | gpu_uuid
    pci.bus_id | gpu_bus_id
    pci.domain
    pci.bus
    pci.device
    pci.baseClass
    pci.subClass
    pci.device_id
    pci.sub_device_id
    vgpu_device_capability.fractional_multiVgpu
    vgpu_device_capability.heterogeneous_timeSlice_profile
    vgpu_device_capability.heterogeneous_timeSlice_sizes
    vgpu_device_capability.homogeneous_placements
    vgpu_device_capability.mig_timeSlicing
    vgpu_device_capability.mig_timeSlicing_mode
    pcie.link.gen.current
    pcie.link.gen.gpucurrent
    pcie.link.gen.max
    pcie.link.gen.gpumax
    pcie.link.gen.hostmax
    pcie.link.width.current
    pcie.link.width.max
    index
    display_mode
    display_attached
    display_active
    persistence_mode
    addressing_mode
    accounting.mode
    accounting.buffer_size
    driver_model.current
    driver_model.pending
    vbios_version
    inforom.img | inforom.image
    inforom.oem
    inforom.ecc
    inforom.pwr | inforom.power
    inforom.checksum_validation
    gpu_recovery_action
    gom.current | gpu_operation_mode.current
    gom.pending | gpu_operation_mode.pending
    fan.speed [%]
    pstate
    clocks_event_reasons.supported | clocks_throttle_reasons.supported
    clocks_event_reasons.active | clocks_throttle_reasons.active
    clocks_event_reasons.gpu_idle | clocks_throttle_reasons.gpu_idle
    clocks_event_reasons.applications_clocks_setting | clocks_throttle_reasons.applications_clocks_setting
    clocks_event_reasons.sw_power_cap | clocks_throttle_reasons.sw_power_cap
    clocks_event_reasons.hw_slowdown | clocks_throttle_reasons.hw_slowdown
    clocks_event_reasons.hw_thermal_slowdown | clocks_throttle_reasons.hw_thermal_slowdown
    clocks_event_reasons.hw_power_brake_slowdown | clocks_throttle_reasons.hw_power_brake_slowdown
    clocks_event_reasons.sw_thermal_slowdown | clocks_throttle_reasons.sw_thermal_slowdown
    clocks_event_reasons.sync_boost | clocks_throttle_reasons.sync_boost
    clocks_event_reasons_counters.sw_power_cap [us]
    clocks_event_reasons_counters.sync_boost [us]
    clocks_event_reasons_counters.sw_thermal_slowdown [us]
    clocks_event_reasons_counters.hw_thermal_slowdown [us]
    clocks_event_reasons_counters.hw_power_brake_slowdown [us]
    memory.total [MiB]
    memory.reserved [MiB]
    memory.used [MiB]
    memory.free [MiB]
    compute_mode
    compute_cap
    utilization.gpu [%]
    utilization.memory [%]
    utilization.encoder [%]
    utilization.decoder [%]
    utilization.jpeg [%]
    utilization.ofa [%]
    encoder.stats.sessionCount
    encoder.stats.averageFps
    encoder.stats.averageLatency
    dramEncryption.mode.current
    dramEncryption.mode.pending
    ecc.mode.current
    ecc.mode.pending
    ecc.errors.corrected.volatile.device_memory
    ecc.errors.corrected.volatile.dram
    ecc.errors.corrected.volatile.register_file
    ecc.errors.corrected.volatile.l1_cache
    ecc.errors.corrected.volatile.l2_cache
    ecc.errors.corrected.volatile.texture_memory
    ecc.errors.corrected.volatile.cbu
    ecc.errors.corrected.volatile.sram
    ecc.errors.corrected.volatile.total
    ecc.errors.corrected.aggregate.device_memory
    ecc.errors.corrected.aggregate.dram
    ecc.errors.corrected.aggregate.register_file
    ecc.errors.corrected.aggregate.l1_cache
    ecc.errors.corrected.aggregate.l2_cache
    ecc.errors.corrected.aggregate.texture_memory
    ecc.errors.corrected.aggregate.cbu
    ecc.errors.corrected.aggregate.sram
    ecc.errors.corrected.aggregate.total
    ecc.errors.uncorrected.volatile.device_memory
    ecc.errors.uncorrected.volatile.dram
    ecc.errors.uncorrected.volatile.register_file
    ecc.errors.uncorrected.volatile.l1_cache
    ecc.errors.uncorrected.volatile.l2_cache
    ecc.errors.uncorrected.volatile.texture_memory
    ecc.errors.uncorrected.volatile.cbu
    ecc.errors.uncorrected.volatile.sram
    ecc.errors.uncorrected.volatile.total
    ecc.errors.uncorrected.aggregate.device_memory
    ecc.errors.uncorrected.aggregate.dram
    ecc.errors.uncorrected.aggregate.register_file
    ecc.errors.uncorrected.aggregate.l1_cache
    ecc.errors.uncorrected.aggregate.l2_cache
    ecc.errors.uncorrected.aggregate.texture_memory
    ecc.errors.uncorrected.aggregate.cbu
    ecc.errors.uncorrected.aggregate.sram
    ecc.errors.uncorrected.aggregate.total
    ecc.errors.uncorrected.volatile.sram.parity
    ecc.errors.uncorrected.volatile.sram.secded
    ecc.errors.uncorrected.aggregate.sram.parity
    ecc.errors.uncorrected.aggregate.sram.secded
    ecc.errors.uncorrected.aggregate.sram.thresholdExceeded
    ecc.errors.uncorrected.aggregate.sram.l2
    ecc.errors.uncorrected.aggregate.sram.sm
    ecc.errors.uncorrected.aggregate.sram.mcu
    ecc.errors.uncorrected.aggregate.sram.pcie
    ecc.errors.uncorrected.aggregate.sram.other
    retired_pages.single_bit_ecc.count | retired_pages.sbe
    retired_pages.double_bit.count | retired_pages.dbe
    retired_pages.pending
    remapped_rows.correctable | remapped_rows.sbe
    remapped_rows.correctable_inactive
    remapped_rows.uncorrectable | remapped_rows.dbe
    remapped_rows.uncorrectable_inactive
    remapped_rows.pending
    remapped_rows.failure
    remapped_rows.histogram.max
    remapped_rows.histogram.high
    remapped_rows.histogram.partial
    remapped_rows.histogram.low
    remapped_rows.histogram.none
    temperature.gpu
    temperature.gpu.tlimit
    temperature.memory
    power.management
    power.draw [W]
    power.draw.average [W] | gpu.power.draw.average
    power.draw.instant [W] | gpu.power.draw.instant
    power.limit [W] | gpu.power.requested_limit
    enforced.power.limit [W] | gpu.power.current_limit
    power.default_limit [W] | gpu.power.default_limit
    power.min_limit [W] | gpu.power.min_limit
    power.max_limit [W] | gpu.power.max_limit
    module.power.draw.average [W]
    module.power.draw.instant [W]
    module.power.limit [W] | module.power.requested_limit
    module.enforced.power.limit [W] | module.power.current_limit
    module.power.default_limit [W]
    module.power.min_limit [W]
    module.power.max_limit [W]
    power_smoothing.delayed_power_smoothing_supported
    power_smoothing.primary_power_floor [W]
    power_smoothing.secondary_power_floor [W]
    power_smoothing.min_primary_floor_activation_offset [W]
    power_smoothing.min_primary_floor_activation_point [W]
    power_smoothing.window_multiplier [ms]
    power_smoothing.curr_profile.secondary_power_floor [W]
    power_smoothing.curr_profile.primary_floor_act_window_multiplier
    power_smoothing.curr_profile.primary_floor_tar_window_multiplier
    power_smoothing.curr_profile.primary_floor_act_offset [W]
    power_smoothing.admin_override.secondary_power_floor [W]
    power_smoothing.admin_override.primary_floor_act_window_multiplier
    power_smoothing.admin_override.primary_floor_tar_window_multiplier
    power_smoothing.admin_override.primary_floor_act_offset [W]
    edpp_multiplier [%]
    clocks.current.graphics [MHz] | clocks.gr
    clocks.current.sm [MHz] | clocks.sm
    clocks.current.memory [MHz] | clocks.mem
    clocks.current.video [MHz] | clocks.video
    clocks.applications.graphics [MHz] | clocks.applications.gr
    clocks.applications.memory [MHz] | clocks.applications.mem
    clocks.default_applications.graphics [MHz] | clocks.default_applications.gr
    clocks.default_applications.memory [MHz] | clocks.default_applications.mem
    clocks.max.graphics [MHz] | clocks.max.gr
    clocks.max.sm [MHz]
    clocks.max.memory [MHz] | clocks.max.mem
    mig.mode.current
    mig.mode.pending
    gsp.mode.current
    gsp.mode.default
    c2c.mode
    protected_memory.total [MiB]
    protected_memory.used [MiB]
    protected_memory.free [MiB]
    fabric.state
    fabric.status
    fabric.cliqueId
    fabric.clusterUuid
    fabric.health.summary
    fabric.health.bandwidth
    fabric.health.route_recovery_in_progress
    fabric.health.route_unhealthy
    fabric.health.access_timeout_recovery
    fabric.health.incorrect_configuration
    fabric.health.partition_assigned
    platform.chassis_serial_number
    platform.slot_number
    platform.tray_index
    platform.host_id
    platform.peer_type
    platform.module_id
    platform.gpu_fabric_guid
    hostname
"""

_APPS_TABLE = """
    timestamp
    gpu_name
    gpu_bus_id
    gpu_serial
    gpu_uuid
    pid
    process_name | name
    used_gpu_memory [MiB] | used_memory
"""

# --query-accounted-apps: names and unit tags as a real 590.48.01 header prints them. gputop reads
# no accounting data, so live backends list no accounted apps; replayed logs keep theirs.
_ACCOUNTED_TABLE = """
    timestamp
    gpu_name
    gpu_bus_id
    gpu_serial
    gpu_uuid
    pid
    gpu_utilization [%]
    mem_utilization [%]
    max_memory_usage [MiB]
    time [ms]
"""

# Fields nvidia-smi answers with DEPRECATED from a driver generation on (the first major version
# whose real capture shows it): display mode has a value in 535 and 555, none from 580 (an H200's
# 580.159.04); power management and the applications clocks have values in 580.159.04 and none
# in 590.48.01 (an H100). Before that generation an unread field is plain N/A.
_RETIRED_FROM = {
    "display_mode": 580,
    "power.management": 590,
    "clocks.applications.graphics": 590,
    "clocks.applications.memory": 590,
    "clocks.default_applications.graphics": 590,
    "clocks.default_applications.memory": 590,
}
# nvidia-smi writes these unavailable as bare N/A, no brackets (an H200 on 580.159.04 without a
# fabric, an H100 on 590.48.01 for the health fields).
NA_BARE = "N/A"


def _unavailable_text(name: str) -> str:
    return NA_BARE if name.startswith("fabric.") else NA


# Value formats: how a number (or flag) from the model is written.
#   str: as is; int: rounded; floor: whole MiB, rounded down; ceil: whole MiB, rounded up (a
#   GPU's memory figures: NVML gives bytes, and nvidia-smi 580 on an H200 printed 615.0625 MiB
#   reserved as 616, 11250.8125 used as 11251, 131905.125 free as 131906); f2: two decimals;
#   hex2/hex4/hex8/hex16: 0x + upper-case hex digits; enabled: Enabled/Disabled;
#   active: Active/Not Active; yesno: Yes/No; mode: a model mode word ("enabled") capitalised
Getter = Callable[[Snapshot, Device, int], Any]


def _reason(bit: int) -> Getter:
    def get(snap: Snapshot, dev: Device, count: int) -> Any:
        mask = _active_mask(snap, dev, count)
        return None if mask is None else bool(mask & bit)

    return get


def _active_mask(snap: Snapshot, dev: Device, count: int) -> int | None:
    if dev.clock_event_mask is not None:
        return dev.clock_event_mask
    if dev.clock_event_reasons is not None:
        mask = 0
        for name in dev.clock_event_reasons:
            mask |= REASONS.get(name, 0)
        return mask
    return None


def _bus_part(pos: int) -> Getter:
    # "00000000:18:00.0" -> domain 0x00000000, bus 0x18, device 0x00
    def get(snap: Snapshot, dev: Device, count: int) -> Any:
        bus_id = dev.pci_bus_id
        if not bus_id:
            return None
        try:
            domain, bus, rest = bus_id.split(":")
            parts = (domain, bus, rest.split(".")[0])
            return int(parts[pos], 16)
        except ValueError:
            return None

    return get


def _memory_free(snap: Snapshot, dev: Device, count: int) -> Any:
    if dev.memory_free_mib is not None:
        return dev.memory_free_mib
    if dev.memory_total_mib is None or dev.memory_used_mib is None:
        return None
    return dev.memory_total_mib - dev.memory_used_mib - (dev.memory_reserved_mib or 0.0)


def _dev(attr: str) -> Getter:
    def get(snap: Snapshot, dev: Device, count: int) -> Any:
        return getattr(dev, attr)  # a Device field named by the table (tests/unit/formats/test_named_fields.py)

    return get


# name -> (kind, getter or model attribute). Fields not listed have no source in the model.
_SOURCES: dict[str, tuple[str, str | Getter]] = {
    "timestamp": ("timestamp", lambda s, d, c: s.time),
    "driver_version": ("str", lambda s, d, c: s.driver_version),
    "count": ("int", lambda s, d, c: c),
    "name": ("str", "name"),
    "serial": ("str", "serial"),
    "uuid": ("str", "uuid"),
    "pci.bus_id": ("str", "pci_bus_id"),
    "pci.domain": ("hex4", _bus_part(0)),
    "pci.bus": ("hex2", _bus_part(1)),
    "pci.device": ("hex2", _bus_part(2)),
    "pci.device_id": ("hex8", "pci_device_id"),
    "pci.sub_device_id": ("hex8", "pci_sub_device_id"),
    "pcie.link.gen.current": ("int", "pcie_gen"),
    "pcie.link.gen.gpucurrent": ("int", "pcie_gen"),
    "pcie.link.gen.max": ("int", "pcie_gen_max"),
    "pcie.link.width.current": ("int", "pcie_width"),
    "pcie.link.width.max": ("int", "pcie_width_max"),
    "index": ("int", "index"),
    "persistence_mode": ("enabled", "persistence_mode"),
    "display_active": ("enabled", "display_active"),
    "vbios_version": ("str", "vbios_version"),
    "fan.speed": ("int", "fan_pct"),
    "pstate": ("str", "pstate"),
    "clocks_event_reasons.supported": ("hex16", "clock_event_supported_mask"),
    "clocks_event_reasons.active": ("hex16", _active_mask),
    "memory.total": ("ceil", "memory_total_mib"),
    "memory.reserved": ("ceil", "memory_reserved_mib"),
    "memory.used": ("ceil", "memory_used_mib"),
    "memory.free": ("ceil", _memory_free),
    "compute_mode": ("str", "compute_mode"),
    "compute_cap": ("str", "compute_capability"),
    "utilization.gpu": ("int", "utilization_gpu_pct"),
    "utilization.memory": ("int", "utilization_memory_pct"),
    "utilization.encoder": ("int", "utilization_encoder_pct"),
    "utilization.decoder": ("int", "utilization_decoder_pct"),
    "ecc.mode.current": ("enabled", "ecc_mode"),
    "ecc.mode.pending": ("enabled", "ecc_mode_pending"),
    "ecc.errors.corrected.volatile.total": ("int", "ecc_errors_corrected_volatile"),
    "ecc.errors.corrected.aggregate.total": ("int", "ecc_errors_corrected_aggregate"),
    "ecc.errors.uncorrected.volatile.total": ("int", "ecc_errors_uncorrected_volatile"),
    "ecc.errors.uncorrected.aggregate.total": ("int", "ecc_errors_uncorrected_aggregate"),
    "retired_pages.single_bit_ecc.count": ("int", "retired_pages_sbe"),
    "retired_pages.double_bit.count": ("int", "retired_pages_dbe"),
    "retired_pages.pending": ("yesno", "retired_pages_pending"),
    "remapped_rows.correctable": ("int", "remapped_rows_correctable"),
    "remapped_rows.uncorrectable": ("int", "remapped_rows_uncorrectable"),
    "remapped_rows.pending": ("yesno", "remapped_rows_pending"),
    "remapped_rows.failure": ("yesno", "remapped_rows_failed"),
    "temperature.gpu": ("int", "temperature_c"),
    "temperature.memory": ("int", "temperature_memory_c"),
    "power.draw": ("f2", "power_draw_w"),
    "power.limit": ("f2", "power_limit_w"),
    "enforced.power.limit": ("f2", "power_limit_w"),  # NVML's enforced limit, as power.limit
    "power.default_limit": ("f2", "power_limit_default_w"),
    "power.min_limit": ("f2", "power_limit_min_w"),
    "power.max_limit": ("f2", "power_limit_max_w"),
    "clocks.current.graphics": ("int", "clock_graphics_mhz"),
    "clocks.current.sm": ("int", "clock_sm_mhz"),
    "clocks.current.memory": ("int", "clock_mem_mhz"),
    "clocks.current.video": ("int", "clock_video_mhz"),
    "clocks.max.graphics": ("int", "clock_graphics_max_mhz"),
    "clocks.max.sm": ("int", "clock_sm_max_mhz"),
    "clocks.max.memory": ("int", "clock_mem_max_mhz"),
    "mig.mode.current": ("mode", "mig_mode"),
    "mig.mode.pending": ("mode", "mig_mode_pending"),
}
for _name, _bit in REASONS.items():
    if _name != "display_clock_setting":  # nvidia-smi has no field for this bit
        _SOURCES[f"clocks_event_reasons.{_name}"] = ("active", _reason(_bit))

# Kinds of the fields with no model source, so that values read back from a log parse right.
_KINDS = {"edpp_multiplier": "f2"}
# Derived fields that still read back into one model attribute (gputop.backends.replay.backend).
_READ_BACK = {"memory.free": "memory_free_mib"}


@dataclass(frozen=True, slots=True)
class Field:
    name: str  # canonical: what the header prints
    aliases: tuple[str, ...] = ()
    unit: str | None = None  # header tag "[unit]" and value suffix " unit"
    kind: str = "str"
    attr: str | None = None  # the model attribute that holds the value (None: derived or absent)
    get: Getter | None = None  # None: the model has no source for this field
    na: str = NA  # printed when the value is unavailable
    retired_from: int | None = None  # the driver major from which nvidia-smi prints DEPRECATED

    @property
    def header(self) -> str:
        return f"{self.name} [{self.unit}]" if self.unit else self.name

    @property
    def suffix(self) -> str:
        return f" {self.unit}" if self.unit else ""


def _parse_table(
    text: str, sources: Mapping[str, tuple[str, str | Getter | None]]
) -> tuple[Field, ...]:
    out = []
    for line in text.strip().splitlines():
        spec, _, alias_text = line.strip().partition(" | ")
        name, _, unit = spec.partition(" [")
        kind, source = sources.get(name, (_KINDS.get(name, "int" if unit else "str"), None))
        attr = source if isinstance(source, str) else _READ_BACK.get(name)
        get = _dev(source) if isinstance(source, str) else source
        out.append(Field(name=name, aliases=tuple(alias_text.split()), unit=unit.rstrip("]") or None,
                         kind=kind, attr=attr, get=get,
                         na=_unavailable_text(name), retired_from=_RETIRED_FROM.get(name)))
    return tuple(out)


GPU_FIELDS: tuple[Field, ...] = _parse_table(_GPU_TABLE, _SOURCES)
APPS_FIELDS: tuple[Field, ...] = _parse_table(
    _APPS_TABLE, {"pid": ("int", None), "used_gpu_memory": ("floor", None)})
ACCOUNTED_FIELDS: tuple[Field, ...] = _parse_table(
    _ACCOUNTED_TABLE, {"pid": ("int", None), "max_memory_usage": ("floor", None)})

QUERIES = {"gpu": GPU_FIELDS, "compute-apps": APPS_FIELDS, "accounted-apps": ACCOUNTED_FIELDS}


def _index(fields: tuple[Field, ...]) -> dict[str, Field]:
    by_name: dict[str, Field] = {}
    for f in fields:
        for n in (f.name, *f.aliases):
            by_name.setdefault(n, f)
    return by_name


_BY_NAME = {query: _index(fields) for query, fields in QUERIES.items()}
_BY_LOWER = {q: {k.lower(): f for k, f in idx.items()} for q, idx in _BY_NAME.items()}


class InvalidField(ValueError):
    """A name that is not a field of this query; ``str()`` is nvidia-smi's message."""

    def __init__(self, name: str) -> None:
        super().__init__(f'Field "{name}" is not a valid field to query.')
        self.name = name


def lookup(name: str, query: str = "gpu") -> Field:
    """The field called ``name`` (canonical or alias; exact first, then ignoring case)."""
    field = _BY_NAME[query].get(name) or _BY_LOWER[query].get(name.lower())
    if field is None:
        raise InvalidField(name)
    return field


def parse_field_list(text: str, query: str = "gpu") -> list[Field]:
    """``"index,clocks.sm"`` -> fields, in order (repeats kept, as nvidia-smi does). An empty
    name (``index,,power.draw``, a trailing comma) is no field: InvalidField(""), nvidia-smi's
    ``Field "" is not a valid field to query.``"""
    return [lookup(n.strip(), query) for n in text.split(",")]


# ---------------------------------------------------------------- values


def format_timestamp(t: float) -> str:
    """``2026/07/14 08:12:38.696``: local time, milliseconds truncated as nvidia-smi does."""
    ms_total = math.floor(t * 1000)
    secs, ms = divmod(ms_total, 1000)
    return time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(secs)) + f".{ms:03d}"


def parse_timestamp(text: str) -> float:
    """Inverse of :func:`format_timestamp` (local time). Raises ValueError."""
    head, dot, ms = text.strip().partition(".")
    st = time.strptime(head, "%Y/%m/%d %H:%M:%S")
    if dot and not (ms.isdigit() and len(ms) <= 6):
        raise ValueError(f"bad milliseconds in {text!r}")
    return time.mktime(st) + (int(ms) / 10 ** len(ms) if dot else 0.0)


def format_value(field: Field, value: Any, units: bool = True) -> str:
    """One cell for a value that is not None."""
    kind = field.kind
    if kind == "str":
        return str(value)
    if kind == "timestamp":
        return format_timestamp(value)
    if kind == "enabled":
        return "Enabled" if value else "Disabled"
    if kind == "mode":
        return str(value).capitalize()
    if kind == "active":
        return "Active" if value else "Not Active"
    if kind == "yesno":
        return "Yes" if value else "No"
    if kind == "hex16":
        return f"0x{int(value):016X}"
    if kind == "hex8":
        return f"0x{int(value):08X}"
    if kind == "hex4":
        return f"0x{int(value):04X}"
    if kind == "hex2":
        return f"0x{int(value):02X}"
    if kind == "f2":
        text = f"{float(value):.2f}"
    elif kind == "floor":
        text = str(math.floor(value))
    elif kind == "ceil":
        text = str(math.ceil(value))
    else:  # int
        text = str(round(value))
    return text + field.suffix if units else text


def unavailable(field: Field, dev: Device | None, driver: str | None) -> str:
    """Return what nvidia-smi prints for a value ``dev`` does not give: the GPU's state when it
    is lost, DEPRECATED where ``driver``'s generation retired the field (an unknown driver: the
    newest), else N/A."""
    if dev is not None and dev.status != "ok":
        return STATUS_TEXT.get(dev.status, field.na)
    if field.retired_from is not None:
        major = driver_major(driver)
        if major is None or major >= field.retired_from:
            return DEPRECATED
    return field.na


def driver_major(driver: str | None) -> int | None:
    """Return the major version of a driver string ("580.159.04" -> 580), None if there is
    none."""
    head = (driver or "").split(".", 1)[0]
    return int(head) if head.isdigit() else None


def adjust_units(field: Field, raw: str, units: bool) -> str:
    """A cell read from a log, with its unit added or removed to match ``units``."""
    suffix = field.suffix
    if not suffix:
        return raw
    if units:
        if raw and not raw.endswith(suffix) and not raw.startswith("[") and _numeric(raw):
            return raw + suffix
        return raw
    return raw[: -len(suffix)] if raw.endswith(suffix) else raw


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def parse_value(field: Field, raw: str) -> Any:
    """A cell back into the model's value (None where unavailable or not understood)."""
    text = raw.strip()
    if not text or (text.startswith("[") and text.endswith("]")):
        return None
    suffix = field.suffix
    if suffix and text.endswith(suffix):
        text = text[: -len(suffix)]
    kind = field.kind
    try:
        if kind == "str":
            return text
        if kind == "timestamp":
            return parse_timestamp(text)
        if kind == "mode":
            return text.lower() if text.lower() in MIG_MODES else None
        if kind in ("enabled", "active", "yesno"):
            return {"Enabled": True, "Disabled": False, "Active": True, "Not Active": False,
                    "Yes": True, "No": False}.get(text)
    except ValueError:
        return None
    # Numbers go through the untrusted-input layer: "nan", "inf", "1e400" or a 4000-digit mask
    # in a log is not a reading (None), never a value the model or the JSON output can't hold.
    if kind.startswith("hex"):
        return parse_int(text, 16)
    value = parse_float(text)
    if value is None or kind == "f2":
        return value
    return int(value) if value.is_integer() else value


def query_wants(query: str, fields: Sequence[Field]) -> dict[str, float]:
    """What a query reads from each sample (gputop.core.budget): the model attributes its fields
    print, fresh on every row, and nothing else (no process list for --query-gpu, as
    nvidia-smi)."""
    if query != "gpu":  # the apps queries print processes and their GPU's serial
        return budget.wants("processes", "serial")
    attrs: list[str] = []
    for f in fields:
        if f.attr is not None:
            attrs.append(f.attr)
        if f.name == "memory.free":  # NVML's own figure, else total - used - reserved
            attrs += ["memory_used_mib", "memory_reserved_mib"]
        elif f.name.startswith("clocks_event_reasons.") and f.attr is None:
            attrs.append("clock_event_mask")  # the active mask and each reason's bit of it
    return budget.wants(*attrs)
