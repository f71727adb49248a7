"""Every NVML read a tick makes: the Device attributes it fills, how often at most, and the
function that makes it — one registry (``READS``), so adding a read is one function and one row.

A read is one NVML query (or a fixed few that only make sense together, like the four ECC
counters). Live readings may be read on every tick; slow-changing facts (limits, modes, PCIe
maxima) no more often than every ``SLOW_REFRESH_S``; identity facts (serial, VBIOS, compute
capability) once. ``due`` is a pure function of what the consumers want and when each read last
ran, so the call budget is testable without a device. Each read's function takes the backend
making it (a ``Reader``), the GPU's state and the read's name, and returns its attributes' values
(None where the GPU has none).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gputop.backends.nvml import mig
from gputop.core import clock_events
from gputop.core.budget import LINK_RATES, Wants
from gputop.core.model import COMPUTE_MODES
from gputop.core.units import MIB

SLOW_REFRESH_S = 10.0
LIVE, SLOW, ONCE = 0.0, SLOW_REFRESH_S, math.inf
# A tick that comes a little early (timer jitter) still counts as a period's end.
EARLY_S = 0.05

_MIG_MODE = {True: "enabled", False: "disabled"}  # nvmlDeviceGetMigMode's 1/0
# What a GPU may refuse in one MIG mode and give in the other (the process lists: a MIG device's
# refusal is remembered on its GPU), asked again when the mode changes.
MIG_UNSUPPORTED = frozenset({"util", "encoder", "decoder", "remapped_rows", "proc_util",
                             "procsC", "procsG"})
COMPUTE_MODE_NAMES = dict(enumerate(COMPUTE_MODES))
# ECC error counters: model attribute -> (NVML error type, counter type) constant names.
ECC_COUNTERS = {
    "ecc_errors_corrected_volatile": ("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_VOLATILE_ECC"),
    "ecc_errors_uncorrected_volatile": ("NVML_MEMORY_ERROR_TYPE_UNCORRECTED",
                                        "NVML_VOLATILE_ECC"),
    "ecc_errors_corrected_aggregate": ("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_AGGREGATE_ECC"),
    "ecc_errors_uncorrected_aggregate": ("NVML_MEMORY_ERROR_TYPE_UNCORRECTED",
                                         "NVML_AGGREGATE_ECC"),
}


class Reader(Protocol):
    """What a read needs of the backend making it (``NvmlBackend``)."""

    nv: Any  # the pynvml module (tests hand in a fake)

    def field(self, gpu: Any, key: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Call ``fn``; a field found absent gives None and is never asked for again."""

    def call(self, gpu: Any, key: str, name: str, *args: Any, older: str | None = None) -> Any:
        """``field`` on the pynvml wrapper called ``name`` (else ``older``) with the GPU's
        handle first."""

    def optional(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call ``fn``; NOT_SUPPORTED/NO_PERMISSION... gives None, other errors raise."""


# (the backend, the GPU's state, this read's name) -> {attribute: value}
Make = Callable[[Reader, Any, str], dict[str, Any]]


@dataclass(frozen=True)
class Read:
    """One read: the Device attributes it fills, the shortest period it is made at, and the
    function that makes it."""

    attrs: tuple[str, ...]
    period: float
    make: Make


def text(value: Any) -> str | None:
    """Decode a string NVML answered (bytes in older bindings)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)


def one_call(wrapper: str, *constants: str,
             convert: Callable[[Any], Any] | None = None) -> Make:
    """A read that is one call of the pynvml ``wrapper`` filling one attribute: ``constants``
    name pynvml's constant arguments, ``convert`` what the model keeps of the answer."""

    def make(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
        # the constants are pynvml's, looked up by name on the (foreign) module
        value = r.call(gpu, read, wrapper, *(getattr(r.nv, c) for c in constants))
        if value is not None and convert is not None:
            value = convert(value)
        return {READS[read].attrs[0]: value}

    return make


def _first(pair: Any) -> Any:
    return pair[0]


def _memory(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    nv, h = r.nv, gpu.handle
    used = reserved = memory = None
    if gpu.memory_v2:
        memory = r.field(gpu, "memory_v2", nv.nvmlDeviceGetMemoryInfo, h, nv.nvmlMemory_v2)
        if memory is None:
            gpu.memory_v2 = False  # driver older than the v2 struct: v1 from now on
        else:
            used, reserved = memory.used / MIB, memory.reserved / MIB
    if memory is None:
        memory = r.field(gpu, "memory", nv.nvmlDeviceGetMemoryInfo, h)
        if memory is not None:
            used = memory.used / MIB  # v1 counts the driver's reservation as used
    # NVML's own free figure, as nvidia-smi prints it: the real H100 capture's memory.free
    # is 1 MiB more than total - reserved - used
    free = memory.free / MIB if memory is not None else None
    return {"memory_used_mib": used, "memory_reserved_mib": reserved, "memory_free_mib": free}


def _util(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    util = r.field(gpu, "util", r.nv.nvmlDeviceGetUtilizationRates, gpu.handle)
    return {"utilization_gpu_pct": util.gpu if util is not None else None,
            "utilization_memory_pct": util.memory if util is not None else None}


def _temp(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    # nvmlDeviceGetTemperature is deprecated (bindings for CUDA 14 drop it): its successor
    # where the binding no longer has it.
    nv = r.nv
    fn = getattr(nv, "nvmlDeviceGetTemperature", None)  # pynvml's, which may lack it
    fn = fn if fn is not None else nv.nvmlDeviceGetTemperatureV
    return {"temperature_c": r.field(gpu, "temp", fn, gpu.handle, nv.NVML_TEMPERATURE_GPU)}


def _memory_temp(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    nv = r.nv
    values = r.field(gpu, "memory_temp", nv.nvmlDeviceGetFieldValues, gpu.handle,
                     [nv.NVML_FI_DEV_MEMORY_TEMP])
    if values is None:
        return {"temperature_memory_c": None}
    v = values[0]
    if v.nvmlReturn != nv.NVML_SUCCESS:
        gpu.skip.add("memory_temp")
        return {"temperature_memory_c": None}
    return {"temperature_memory_c": v.value.uiVal}


def _events(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    mask = r.call(gpu, "events", "nvmlDeviceGetCurrentClocksEventReasons",
                  older="nvmlDeviceGetCurrentClocksThrottleReasons")
    return {"clock_event_mask": mask,
            "clock_event_reasons": clock_events.decode(mask) if mask is not None else None}


def _supported_events(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    return {"clock_event_supported_mask": r.call(
        gpu, "supported_events", "nvmlDeviceGetSupportedClocksEventReasons",
        older="nvmlDeviceGetSupportedClocksThrottleReasons")}


def _compute_capability(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    cc = r.call(gpu, "compute_capability", "nvmlDeviceGetCudaComputeCapability")
    return {"compute_capability": f"{cc[0]}.{cc[1]}" if cc is not None else None}


def _ecc(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    ecc = r.field(gpu, "ecc", r.nv.nvmlDeviceGetEccMode, gpu.handle)
    return {"ecc_mode": bool(ecc[0]) if ecc is not None else None,
            "ecc_mode_pending": bool(ecc[1]) if ecc is not None else None}


def _remapped_rows(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    # (correctable, uncorrectable, pending, failure)
    rows = r.call(gpu, "remapped_rows", "nvmlDeviceGetRemappedRows")
    return {"remapped_rows_correctable": rows[0] if rows is not None else None,
            "remapped_rows_uncorrectable": rows[1] if rows is not None else None,
            "remapped_rows_pending": bool(rows[2]) if rows is not None else None,
            "remapped_rows_failed": bool(rows[3]) if rows is not None else None}


def _retired_pages(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    # Pre-Ampere GPUs retire pages; later ones answer NOT_SUPPORTED and are not asked again.
    nv = r.nv
    sbe = r.call(gpu, "retired_sbe", "nvmlDeviceGetRetiredPages",
                 nv.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
    dbe = r.call(gpu, "retired_dbe", "nvmlDeviceGetRetiredPages",
                 nv.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
    pending = r.call(gpu, "retired_pending", "nvmlDeviceGetRetiredPagesPendingStatus")
    return {"retired_pages_sbe": len(sbe) if sbe is not None else None,
            "retired_pages_dbe": len(dbe) if dbe is not None else None,
            "retired_pages_pending": bool(pending) if pending is not None else None}


# NVLink error counters, each NVML's total over all links: model attribute -> field id name.
NVLINK_ERRORS = {
    "nvlink_crc_flit_errors": "NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "nvlink_crc_data_errors": "NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "nvlink_replay_errors": "NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "nvlink_recovery_errors": "NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
}


def _nvlink_errors(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    # One field-values call for the four totals; a GPU without NVLink refuses each, and one that
    # refuses all of them is not asked again.
    nv = r.nv
    ids = [getattr(nv, name) for name in NVLINK_ERRORS.values()]  # pynvml's constants, by name
    values = r.field(gpu, read, nv.nvmlDeviceGetFieldValues, gpu.handle, ids)
    out: dict[str, Any] = dict.fromkeys(NVLINK_ERRORS)
    if values is None:
        return out
    for attr, v in zip(NVLINK_ERRORS, values):
        if v.nvmlReturn == nv.NVML_SUCCESS:
            out[attr] = int(v.value.ullVal)
    if all(value is None for value in out.values()):
        gpu.skip.add(read)
    return out


# Temperature thresholds: model attribute -> NVML threshold constant name.
TEMPERATURE_THRESHOLDS = {
    "temperature_shutdown_c": "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN",
    "temperature_slowdown_c": "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN",
    "temperature_memory_max_c": "NVML_TEMPERATURE_THRESHOLD_MEM_MAX",
    "temperature_gpu_max_c": "NVML_TEMPERATURE_THRESHOLD_GPU_MAX",
}


def _temperature_thresholds(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    return {attr: r.call(gpu, attr, "nvmlDeviceGetTemperatureThreshold", getattr(r.nv, name))
            for attr, name in TEMPERATURE_THRESHOLDS.items()}  # pynvml's constants, by name


def _ecc_counters(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    # Counters exist only while ECC is on (NVML: "Requires ECC Mode to be enabled"); with it
    # off they are not asked, so that turning ECC on (and resetting) finds them again.
    nv = r.nv
    ecc_on = gpu.values.get("ecc_mode") is not False
    out = {}
    for attr in READS[read].attrs:
        error_type, counter_type = ECC_COUNTERS[attr]
        # pynvml's constants, by name
        out[attr] = r.field(gpu, attr, nv.nvmlDeviceGetTotalEccErrors, gpu.handle,
                            getattr(nv, error_type), getattr(nv, counter_type)) \
            if ecc_on else None
    return out


def _mig(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    modes = r.field(gpu, "mig", r.nv.nvmlDeviceGetMigMode, gpu.handle)
    slots = mig.probe(r.nv, gpu.handle, r.optional, text) \
        if modes is not None and modes[0] else ()
    mode = _MIG_MODE[bool(modes[0])] if modes is not None else None
    if mode != gpu.values.get("mig_mode", mode):
        gpu.skip -= MIG_UNSUPPORTED  # what MIG took away may answer again, and vice versa
    if [s.ids for s in slots] != [s.ids for s in gpu.mig]:
        gpu.mig = slots
        gpu.values.pop("mig_memory", None)
        gpu.read_at.pop("mig_instances", None)
        if gpu.gpm is not None:
            gpu.gpm.close()  # re-partitioned: GPM streams per the new GPU instances
    return {"mig_mode": mode,
            "mig_mode_pending": _MIG_MODE[bool(modes[1])] if modes is not None else None}


def _pcie_max(r: Reader, gpu: Any, read: str) -> dict[str, Any]:
    nv, h = r.nv, gpu.handle
    return {"pcie_gen_max": r.field(gpu, "pcie_gen_max", nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
            "pcie_width_max": r.field(gpu, "pcie_width_max", nv.nvmlDeviceGetMaxPcieLinkWidth,
                                      h)}


READS: dict[str, Read] = {
    "memory": Read(("memory_used_mib", "memory_reserved_mib", "memory_free_mib"), LIVE, _memory),
    "util": Read(("utilization_gpu_pct", "utilization_memory_pct"), LIVE, _util),
    "encoder": Read(("utilization_encoder_pct",), LIVE,  # [%, sampling period µs]
                    one_call("nvmlDeviceGetEncoderUtilization", convert=_first)),
    "decoder": Read(("utilization_decoder_pct",), LIVE,
                    one_call("nvmlDeviceGetDecoderUtilization", convert=_first)),
    "temp": Read(("temperature_c",), LIVE, _temp),
    "memory_temp": Read(("temperature_memory_c",), LIVE, _memory_temp),
    "fan": Read(("fan_pct",), LIVE, one_call("nvmlDeviceGetFanSpeed")),
    "power": Read(("power_draw_w",), LIVE,
                  one_call("nvmlDeviceGetPowerUsage", convert=lambda mw: mw / 1000.0)),
    "energy": Read(("energy_j",), LIVE,
                   one_call("nvmlDeviceGetTotalEnergyConsumption",
                            convert=lambda mj: mj / 1000.0)),
    "clock_sm": Read(("clock_sm_mhz",), LIVE, one_call("nvmlDeviceGetClockInfo", "NVML_CLOCK_SM")),
    "clock_mem": Read(("clock_mem_mhz",), LIVE,
                      one_call("nvmlDeviceGetClockInfo", "NVML_CLOCK_MEM")),
    "clock_graphics": Read(("clock_graphics_mhz",), LIVE,
                           one_call("nvmlDeviceGetClockInfo", "NVML_CLOCK_GRAPHICS")),
    "clock_video": Read(("clock_video_mhz",), LIVE,
                        one_call("nvmlDeviceGetClockInfo", "NVML_CLOCK_VIDEO")),
    "pstate": Read(("pstate",), LIVE,
                   one_call("nvmlDeviceGetPerformanceState",
                            convert=lambda p: f"P{p}" if 0 <= p <= 15 else None)),
    "events": Read(("clock_event_reasons", "clock_event_mask"), LIVE, _events),
    "pcie_gen": Read(("pcie_gen",), LIVE, one_call("nvmlDeviceGetCurrPcieLinkGeneration")),
    "pcie_width": Read(("pcie_width",), LIVE, one_call("nvmlDeviceGetCurrPcieLinkWidth")),
    "limit": Read(("power_limit_w",), SLOW,
                  one_call("nvmlDeviceGetEnforcedPowerLimit", convert=lambda mw: mw / 1000.0)),
    "management_limit": Read(("power_management_limit_w",), SLOW,
                             one_call("nvmlDeviceGetPowerManagementLimit",
                                      convert=lambda mw: mw / 1000.0)),
    "ecc": Read(("ecc_mode", "ecc_mode_pending"), SLOW, _ecc),
    # The uncorrected volatile count alone is what the dashboard's health badge reads (#27):
    # its own read, one call, not the four counters'.
    "ecc_uncorrected": Read(("ecc_errors_uncorrected_volatile",), SLOW, _ecc_counters),
    "ecc_counters": Read(tuple(a for a in ECC_COUNTERS if a != "ecc_errors_uncorrected_volatile"),
                         SLOW, _ecc_counters),
    "mig": Read(("mig_mode", "mig_mode_pending"), SLOW, _mig),
    "persistence": Read(("persistence_mode",), SLOW,
                        one_call("nvmlDeviceGetPersistenceMode", convert=bool)),
    "display_active": Read(("display_active",), SLOW,
                           one_call("nvmlDeviceGetDisplayActive", convert=bool)),
    "compute_mode": Read(("compute_mode",), SLOW,
                         one_call("nvmlDeviceGetComputeMode", convert=COMPUTE_MODE_NAMES.get)),
    "pcie_max": Read(("pcie_gen_max", "pcie_width_max"), SLOW, _pcie_max),
    # health counters dashboards alert on (dcgm-exporter's defaults); they change rarely
    "pcie_replay": Read(("pcie_replay_count",), SLOW, one_call("nvmlDeviceGetPcieReplayCounter")),
    "remapped_rows": Read(("remapped_rows_correctable", "remapped_rows_uncorrectable",
                           "remapped_rows_pending", "remapped_rows_failed"), SLOW, _remapped_rows),
    "retired_pages": Read(("retired_pages_sbe", "retired_pages_dbe", "retired_pages_pending"),
                          SLOW, _retired_pages),
    "nvlink_errors": Read(tuple(NVLINK_ERRORS), SLOW, _nvlink_errors),
    "serial": Read(("serial",), ONCE, one_call("nvmlDeviceGetSerial", convert=text)),
    "vbios": Read(("vbios_version",), ONCE, one_call("nvmlDeviceGetVbiosVersion", convert=text)),
    "minor": Read(("minor_number",), ONCE, one_call("nvmlDeviceGetMinorNumber")),
    "compute_capability": Read(("compute_capability",), ONCE, _compute_capability),
    "clock_graphics_max": Read(("clock_graphics_max_mhz",), ONCE,
                               one_call("nvmlDeviceGetMaxClockInfo", "NVML_CLOCK_GRAPHICS")),
    "supported_events": Read(("clock_event_supported_mask",), ONCE, _supported_events),
    "temperature_thresholds": Read(tuple(TEMPERATURE_THRESHOLDS), ONCE, _temperature_thresholds),
}
# Reads beyond READS, each more than one attribute's worth, wanted like reads but made
# otherwise: the process lists (and per-process SM%), GPM, under MIG each MIG device's memory
# (its processes come with "processes", its GPM with "saturation"), the Xid events (xid.py), and
# on a GPU without GPM the link counters (links.py).
COMPOUND = ("processes", "saturation", "mig_instances", "xid_last", "xid_events", LINK_RATES)
# Reads that others depend on: GPM, the process lists and the MIG devices need to know whether
# MIG is on (reading the mode probes the MIG layout: gputop/backends/nvml/mig.py); the ECC
# counters exist only while ECC is on.
NEEDS = {"saturation": ("mig",), "processes": ("mig",), "mig_instances": ("mig",),
         "ecc_counters": ("ecc",), "ecc_uncorrected": ("ecc",)}
# Every attribute a read fills, with its read.
READ_OF = {attr: read for read, spec in READS.items() for attr in spec.attrs}


def periods(wants: Wants | None) -> dict[str, float]:
    """Each read some consumer wants, with the period it is due at: the shortest period asked
    for any of its attributes, never shorter than the read's own floor."""
    if wants is None:
        out = {read: spec.period for read, spec in READS.items()}
        # all but the link counters, which only a view showing them asks for (budget.LINK_RATES)
        out.update(dict.fromkeys((c for c in COMPOUND if c != LINK_RATES), LIVE))
        return out
    out = {}
    for attr, every in wants.items():
        read = READ_OF.get(attr)
        if read is None:
            if attr in COMPOUND:
                out[attr] = min(every, out.get(attr, math.inf))
            continue
        floor = READS[read].period
        out[read] = max(floor, min(every, out.get(read, math.inf)))
    if LINK_RATES in out:
        # where GPM measures the link rates, they come with its reading: as fresh as asked
        out["saturation"] = min(out[LINK_RATES], out.get("saturation", math.inf))
    for read, needed in NEEDS.items():
        if read in out:
            for other in needed:
                out.setdefault(other, READS[other].period)
    return out


def due(period: float, read_at: float | None, now: float) -> bool:
    """Whether a read last made at ``read_at`` (None: never) is due again at ``now``."""
    return read_at is None or now - read_at >= period - EARLY_S


def fresh(periods_: Mapping[str, float], read_at: Mapping[str, float], now: float) -> list[str]:
    """The reads to make now, in READS order."""
    return [r for r in READS if r in periods_ and due(periods_[r], read_at.get(r), now)]


def make(reader: Reader, gpu: Any, read: str) -> dict[str, Any]:
    """Make one read of READS: the values of its attributes (None where the GPU has none)."""
    return READS[read].make(reader, gpu, read)
