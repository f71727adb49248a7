"""The node model: plain frozen dataclasses and the `gputop/1` JSON codec.

Everything in gputop speaks these types. This module imports nothing of gputop's and nothing
outside the standard library, so any consumer (a remote agent included) can load it cheaply.

A value a device does not report is ``None`` (JSON ``null``), never a made-up 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, cast

SCHEMA = "gputop/1"

DEVICE_STATUSES = ("ok", "lost", "error")
HINT_CODES = (
    "input-bound",
    "underfilled",
    "memory-bound",
    "power-capped",
    "thermal-throttled",
    "straggler",
    "idle-allocated",
    "memory-nearly-full",
    "device-unhealthy",
    "ecc-uncorrected",
    "row-remap-failed",
    "row-remap-pending",
    "pages-pending",
    "pcie-degraded",
    "xid",
)
HINT_SEVERITIES = ("info", "warning", "critical")
MIG_MODES = ("enabled", "disabled")
# A device's compute modes in NVML's (and DCGM's) enum order, named as nvidia-smi names them.
COMPUTE_MODES = ("Default", "Exclusive_Thread", "Prohibited", "Exclusive_Process")


@dataclass(frozen=True, slots=True)
class Saturation:
    """How busy the SMs and links really are; ``source`` says who measured it.

    One source per figure: where ``source`` measured the link rates (GPM) they are its own; a
    GPU without GPM may still have them from NVML's own PCIe and NVLink counters
    (gputop/backends/nvml/links.py), with ``source`` None: the SM-level figures unmeasured."""

    source: str | None = None  # "gpm" | "sim" | "dcgm" | None (no SM-level figure measured)
    gr_engine_active_pct: float | None = None  # any graphics/compute engine busy (GPM)
    sm_active_pct: float | None = None
    sm_occupancy_pct: float | None = None
    tensor_active_pct: float | None = None
    dram_bw_pct: float | None = None
    fp16_pct: float | None = None
    fp32_pct: float | None = None
    fp64_pct: float | None = None
    pcie_tx_mibps: float | None = None
    pcie_rx_mibps: float | None = None
    nvlink_tx_mibps: float | None = None
    nvlink_rx_mibps: float | None = None


@dataclass(frozen=True, slots=True)
class Container:
    """The container a process runs in, as its cgroup path names it (and a pod, under Kubernetes).

    ``runtime`` is "docker", "containerd", "cri-o", "podman" or "lxc", or None where the path
    gives the id but not who made it (Kubernetes' cgroupfs driver). ``name`` is the container's
    own name where it can be read cheaply on the node, else None (show the short id)."""

    runtime: str | None = None
    id: str | None = None
    name: str | None = None
    pod: str | None = None
    pod_namespace: str | None = None
    pod_uid: str | None = None

    @property
    def label(self) -> str | None:
        """What to call it: its name, else its short id (12 characters, as ``docker ps``)."""
        return self.name or (self.id[:12] if self.id else None)


@dataclass(frozen=True, slots=True)
class Job:
    """The batch job a process belongs to: its scheduler, job id and step ("0", "batch", …)."""

    scheduler: str
    id: str
    step: str | None = None


@dataclass(frozen=True, slots=True)
class Process:
    pid: int
    user: str | None = None
    name: str | None = None
    command: str | None = None
    gpu_memory_mib: float | None = None
    sm_pct: float | None = None
    cpu_pct: float | None = None
    host_memory_mib: float | None = None
    started: float | None = None  # epoch seconds
    type: str | None = None  # "C" compute, "G" graphics, "C+G"
    container: Container | None = None
    job: Job | None = None
    # Its PID inside its own PID namespace (NSpid's last entry), where that differs from ``pid``.
    namespace_pid: int | None = None
    # True when gputop runs in another PID namespace and no process it can see is this one:
    # only the device's facts (PID as the driver reports it, memory) are known.
    outside_pid_namespace: bool = False
    # True when the device still lists the PID but no such process exists on the host any more
    # (it exited between the driver's list and the host's read): none of its host facts are known.
    gone: bool = False
    # MIG: the GPU instance and compute instance the process runs in (None on a whole GPU).
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    # How long it has held its GPU (or MIG instance) idle, and the GPU's energy meanwhile (its
    # share by memory): gputop.analysis.waste; None where no ledger ran (an older stream).
    idle_s: float | None = None
    idle_energy_j: float | None = None


@dataclass(frozen=True, slots=True)
class MigInstance:
    """One MIG device: a compute instance inside a GPU instance, as ``nvidia-smi -L`` lists it."""

    gpu_instance_id: int
    compute_instance_id: int
    index: int | None = None  # the MIG device's index on its GPU ("MIG 3g.40gb Device 0")
    profile: str | None = None  # nvidia-smi's name: "1g.10gb", "3g.40gb", "1g.10gb+me"
    uuid: str | None = None  # "MIG-…"
    sm_count: int | None = None
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    saturation: Saturation = field(default_factory=Saturation)  # GPM of its GPU instance
    processes: tuple[Process, ...] = ()

    @property
    def memory_pct(self) -> float | None:
        if self.memory_used_mib is None or not self.memory_total_mib:
            return None
        return 100.0 * self.memory_used_mib / self.memory_total_mib


@dataclass(frozen=True, slots=True)
class XidEvent:
    """One Xid error the driver reported: on which GPU, its code, and when gputop saw it
    (epoch seconds: NVML's event carries no time of its own, so it is when the event was
    drained, at most one sample after the driver raised it)."""

    device: int
    code: int
    time: float


@dataclass(frozen=True, slots=True)
class Device:
    """One device at one instant: its identity, its readings and its processes."""

    index: int
    uuid: str | None = None
    name: str | None = None
    vendor: str | None = None  # "nvidia" | "huawei" | "amd" | "intel"
    pci_bus_id: str | None = None
    status: str = "ok"  # "ok" | "lost" | "error"
    status_reason: str | None = None
    # Seconds since these readings were taken, where a backend serves cached values (npu-smi can
    # take seconds to answer); None means read live for this snapshot.
    data_age_s: float | None = None
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    memory_reserved_mib: float | None = None
    # AMD: GTT, the system memory the GPU maps through its page tables (on an APU most of what it
    # uses, beside a small VRAM carve-out); None on other vendors.
    memory_gtt_total_mib: float | None = None
    memory_gtt_used_mib: float | None = None
    utilization_gpu_pct: float | None = None
    utilization_memory_pct: float | None = None
    temperature_c: float | None = None
    temperature_memory_c: float | None = None
    # AMD: the hottest point of the die (the junction or hotspot sensor), where temperature_c is
    # the edge sensor's; None on other vendors.
    temperature_hotspot_c: float | None = None
    fan_pct: float | None = None
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    power_limit_default_w: float | None = None
    power_limit_min_w: float | None = None
    power_limit_max_w: float | None = None
    # The limit set through the management interface (nvidia-smi -pl); power_limit_w is the one
    # the driver enforces, which another limiter (out-of-band, the board) may hold lower.
    power_management_limit_w: float | None = None
    energy_j: float | None = None
    clock_sm_mhz: float | None = None
    clock_mem_mhz: float | None = None
    clock_sm_max_mhz: float | None = None
    clock_mem_max_mhz: float | None = None
    pstate: str | None = None
    clock_event_reasons: tuple[str, ...] | None = None
    clock_event_mask: int | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    ecc_mode: bool | None = None
    persistence_mode: bool | None = None
    display_active: bool | None = None  # a display is initialised on the GPU (nvidia-smi's Disp.A)
    mig_mode: str | None = None  # MIG_MODES; None where the device has no MIG
    compute_mode: str | None = None
    serial: str | None = None
    vbios_version: str | None = None
    # nvidia-smi query fields that NVML reports cheaply (query mode prints them; see gputop/query).
    pci_device_id: int | None = None  # 0x233010DE: device id << 16 | vendor id
    pci_sub_device_id: int | None = None
    compute_capability: str | None = None  # "9.0"
    memory_free_mib: float | None = None
    utilization_encoder_pct: float | None = None
    utilization_decoder_pct: float | None = None
    clock_graphics_mhz: float | None = None
    clock_video_mhz: float | None = None
    clock_graphics_max_mhz: float | None = None
    clock_event_supported_mask: int | None = None
    ecc_mode_pending: bool | None = None
    mig_mode_pending: str | None = None
    ecc_errors_corrected_volatile: int | None = None
    ecc_errors_uncorrected_volatile: int | None = None
    ecc_errors_corrected_aggregate: int | None = None
    ecc_errors_uncorrected_aggregate: int | None = None
    # Health counters dashboards alert on (dcgm-exporter's defaults).
    pcie_replay_count: int | None = None  # PCIe retries since boot
    xid_last: int | None = None  # the last Xid error the driver reported (0: none yet)
    # The Xids the driver reported since the previous sample, oldest first ("()" also where
    # the device reports no Xids at all: xid_last is None there).
    xid_events: tuple[XidEvent, ...] = ()
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_failed: bool | None = None
    remapped_rows_pending: bool | None = None  # a remap waits for the next GPU reset
    # Pages retired for ECC errors (GPUs before Ampere; later ones remap rows instead).
    retired_pages_sbe: int | None = None  # for repeated single-bit errors
    retired_pages_dbe: int | None = None  # for double-bit errors
    retired_pages_pending: bool | None = None  # a retirement waits for the next reboot
    # NVLink error counters, summed over the GPU's links.
    nvlink_crc_flit_errors: int | None = None
    nvlink_crc_data_errors: int | None = None
    nvlink_replay_errors: int | None = None
    nvlink_recovery_errors: int | None = None
    # The driver's temperature thresholds: where it slows the clocks, where it shuts the GPU
    # down, and the highest the GPU and its memory are meant to run at.
    temperature_slowdown_c: float | None = None
    temperature_shutdown_c: float | None = None
    temperature_gpu_max_c: float | None = None
    temperature_memory_max_c: float | None = None
    # The kernel's minor number of its device file (/dev/nvidiaN): what Slurm's GRES indices
    # count, where NVML's index need not agree.
    minor_number: int | None = None
    saturation: Saturation = field(default_factory=Saturation)
    # Every process on the device; under MIG the union of its instances' processes, each
    # carrying its instance ids.
    processes: tuple[Process, ...] = ()
    mig_instances: tuple[MigInstance, ...] = ()
    # Simulator only: {"work_rate": ground-truth throughput relative to the unthrottled job}.
    sim: dict[str, float] | None = None
    # Huawei Ascend: npu-smi's NPU (card) id and the chip's id on it; None on other vendors.
    npu_id: int | None = None
    chip_id: int | None = None

    @property
    def memory_pct(self) -> float | None:
        if self.memory_used_mib is None or not self.memory_total_mib:
            return None
        return 100.0 * self.memory_used_mib / self.memory_total_mib

    @property
    def power_pct(self) -> float | None:
        if self.power_draw_w is None or not self.power_limit_w:
            return None
        return 100.0 * self.power_draw_w / self.power_limit_w

    @property
    def clock_sm_pct(self) -> float | None:
        """The SM clock as a share of its maximum: how far a slowdown holds it back."""
        if self.clock_sm_mhz is None or not self.clock_sm_max_mhz:
            return None
        return 100.0 * self.clock_sm_mhz / self.clock_sm_max_mhz

    @property
    def process_sm_pct(self) -> float | None:
        """The processes' SM shares summed (at most 100): busy by what its processes report."""
        procs = [p.sm_pct for p in self.processes if p.sm_pct is not None]
        return min(100.0, sum(procs)) if procs else None


@dataclass(frozen=True, slots=True)
class Hint:
    device: int | None  # None: about the node as a whole
    code: str
    severity: str
    message: str
    advice: str | None = None
    # MIG: the GPU instance the hint is about (None: the whole device).
    gpu_instance_id: int | None = None


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """Static facts about a device, read once when a backend opens."""

    index: int
    uuid: str | None = None
    name: str | None = None
    vendor: str | None = None
    pci_bus_id: str | None = None
    memory_total_mib: float | None = None
    power_limit_default_w: float | None = None
    power_limit_min_w: float | None = None
    power_limit_max_w: float | None = None
    clock_sm_max_mhz: float | None = None
    clock_mem_max_mhz: float | None = None


@dataclass(frozen=True, slots=True)
class NodeInfo:
    host: str
    backend: str
    driver_version: str | None = None
    cuda_version: str | None = None
    devices: tuple[DeviceInfo, ...] = ()


@dataclass(frozen=True, slots=True)
class Snapshot:
    host: str
    time: float
    backend: str
    devices: tuple[Device, ...] = ()
    driver_version: str | None = None
    cuda_version: str | None = None
    hints: tuple[Hint, ...] = ()
    schema: str = SCHEMA

    def device(self, index: int) -> Device | None:
        for dev in self.devices:
            if dev.index == index:
                return dev
        return None

    def with_hints(self, hints: tuple[Hint, ...]) -> Snapshot:
        return replace(self, hints=tuple(hints))


# ---------------------------------------------------------------- JSON codec
#
# Field lists are computed once: the codec runs on every sample of every agent.

_SAT_FIELDS = tuple(f.name for f in fields(Saturation))
_CONTAINER_FIELDS = tuple(f.name for f in fields(Container))
_JOB_FIELDS = tuple(f.name for f in fields(Job))
_PROC_NESTED = ("container", "job")
_PROC_FIELDS = tuple(f.name for f in fields(Process) if f.name not in _PROC_NESTED)
_HINT_FIELDS = tuple(f.name for f in fields(Hint))
_MIG_NESTED = ("saturation", "processes")
_MIG_FIELDS = tuple(f.name for f in fields(MigInstance) if f.name not in _MIG_NESTED)
_XID_FIELDS = tuple(f.name for f in fields(XidEvent))
_DEV_SCALARS = tuple(
    f.name for f in fields(Device)
    if f.name not in ("saturation", "processes", "clock_event_reasons", "mig_instances",
                      "xid_events")
)
_SNAPSHOT_KEYS = ("schema", "host", "time", "backend", "driver_version", "cuda_version")


class SchemaError(ValueError):
    """A document that is not a valid ``gputop/1`` snapshot."""


def _flat(obj: Any, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in names}


def device_to_json(dev: Device) -> dict[str, Any]:
    out = _flat(dev, _DEV_SCALARS)
    if out["sim"] is None:
        del out["sim"]  # the "sim" key exists only on the simulator
    reasons = dev.clock_event_reasons
    out["clock_event_reasons"] = list(reasons) if reasons is not None else None
    out["saturation"] = _flat(dev.saturation, _SAT_FIELDS)
    out["processes"] = [process_to_json(p) for p in dev.processes]
    out["mig_instances"] = [mig_instance_to_json(m) for m in dev.mig_instances]
    out["xid_events"] = [_flat(e, _XID_FIELDS) for e in dev.xid_events]
    return out


def mig_instance_to_json(inst: MigInstance) -> dict[str, Any]:
    out = _flat(inst, _MIG_FIELDS)
    out["saturation"] = _flat(inst.saturation, _SAT_FIELDS)
    out["processes"] = [process_to_json(p) for p in inst.processes]
    return out


def process_to_json(proc: Process) -> dict[str, Any]:
    out = _flat(proc, _PROC_FIELDS)
    out["container"] = _flat(proc.container, _CONTAINER_FIELDS) if proc.container else None
    out["job"] = _flat(proc.job, _JOB_FIELDS) if proc.job else None
    return out


def snapshot_to_json(snap: Snapshot) -> dict[str, Any]:
    out = _flat(snap, _SNAPSHOT_KEYS)
    out["devices"] = [device_to_json(d) for d in snap.devices]
    out["hints"] = [_flat(h, _HINT_FIELDS) for h in snap.hints]
    return out


def _pick(cls: type, data: dict[str, Any], names: tuple[str, ...]) -> Any:
    # Unknown keys are ignored: a newer agent may add keys (schema rule: add freely).
    return cls(**{k: data[k] for k in names if k in data})


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise SchemaError(what)


def device_from_json(data: dict[str, Any]) -> Device:
    _check(isinstance(data, dict), "device is not an object")
    _check(isinstance(data.get("index"), int), "device without an integer index")
    kwargs = {k: data[k] for k in _DEV_SCALARS if k in data}
    reasons = data.get("clock_event_reasons")
    if reasons is not None:
        _check(isinstance(reasons, list), "clock_event_reasons is not a list")
        kwargs["clock_event_reasons"] = tuple(str(r) for r in reasons)
    _holder_from_json(data, kwargs, "")
    instances = data.get("mig_instances") or []
    _check(isinstance(instances, list), "mig_instances is not a list")
    kwargs["mig_instances"] = tuple(mig_instance_from_json(m) for m in instances)
    # absent in a stream from an agent older than the field: no Xids seen
    xids = data.get("xid_events") or []
    _check(isinstance(xids, list), "xid_events is not a list")
    kwargs["xid_events"] = tuple(xid_event_from_json(e) for e in xids)
    return Device(**kwargs)


def xid_event_from_json(data: Any) -> XidEvent:
    _check(isinstance(data, dict), "Xid event is not an object")
    device, code, time = data.get("device"), data.get("code"), data.get("time")
    _check(all(isinstance(v, int) and not isinstance(v, bool) for v in (device, code))
           and isinstance(time, (int, float)) and not isinstance(time, bool),
           "Xid event without an integer device and code and a numeric time")
    return XidEvent(device=device, code=code, time=float(time))


def mig_instance_from_json(data: Any) -> MigInstance:
    _check(isinstance(data, dict), "MIG instance is not an object")
    _check(isinstance(data.get("gpu_instance_id"), int)
           and isinstance(data.get("compute_instance_id"), int),
           "MIG instance without integer gpu_instance_id and compute_instance_id")
    kwargs = {k: data[k] for k in _MIG_FIELDS if k in data}
    _holder_from_json(data, kwargs, "MIG instance ")
    return MigInstance(**kwargs)


def _holder_from_json(data: dict[str, Any], kwargs: dict[str, Any], what: str) -> None:
    """A device's or a MIG instance's saturation and processes, into ``kwargs``."""
    sat = data.get("saturation") or {}
    _check(isinstance(sat, dict), f"{what}saturation is not an object")
    kwargs["saturation"] = _pick(Saturation, sat, _SAT_FIELDS)
    procs = data.get("processes") or []
    _check(isinstance(procs, list), f"{what}processes is not a list")
    kwargs["processes"] = tuple(process_from_json(p) for p in procs)


def _strings(data: Any, names: tuple[str, ...], what: str) -> dict[str, str | None]:
    _check(isinstance(data, dict), f"{what} is not an object")
    out = {k: data[k] for k in names if k in data}
    for key, value in out.items():
        _check(value is None or isinstance(value, str), f"{what}.{key} is not a string")
    return out


def process_from_json(data: Any) -> Process:
    _check(isinstance(data, dict) and isinstance(data.get("pid"), int), "process without a pid")
    kwargs = {k: data[k] for k in _PROC_FIELDS if k in data}
    ns_pid = kwargs.get("namespace_pid")
    _check(ns_pid is None or (isinstance(ns_pid, int) and not isinstance(ns_pid, bool)),
           "namespace_pid is not an integer")
    _check(isinstance(kwargs.get("outside_pid_namespace", False), bool),
           "outside_pid_namespace is not a boolean")
    _check(isinstance(kwargs.get("gone", False), bool), "gone is not a boolean")
    container = data.get("container")
    if container is not None:
        kwargs["container"] = Container(**_strings(container, _CONTAINER_FIELDS, "container"))
    job = data.get("job")
    if job is not None:
        fields_ = _strings(job, _JOB_FIELDS, "job")
        _check(isinstance(fields_.get("scheduler"), str) and isinstance(fields_.get("id"), str),
               "job without a scheduler and an id")
        kwargs["job"] = Job(**cast("dict[str, Any]", fields_))  # _check: both are str
    return Process(**kwargs)


def snapshot_from_json(data: Any) -> Snapshot:
    """Decode and validate a ``gputop/1`` document (untrusted input: raises SchemaError)."""
    _check(isinstance(data, dict), "snapshot is not an object")
    _check(data.get("schema") == SCHEMA, f"schema is {data.get('schema')!r}, expected {SCHEMA!r}")
    _check(isinstance(data.get("host"), str), "snapshot without a host")
    _check(isinstance(data.get("time"), (int, float)), "snapshot without a time")
    _check(isinstance(data.get("backend"), str), "snapshot without a backend")
    devices = data.get("devices") or []
    _check(isinstance(devices, list), "devices is not a list")
    hints = data.get("hints") or []
    _check(isinstance(hints, list), "hints is not a list")
    try:
        return Snapshot(
            schema=SCHEMA,
            host=data["host"],
            time=float(data["time"]),
            backend=data["backend"],
            driver_version=data.get("driver_version"),
            cuda_version=data.get("cuda_version"),
            devices=tuple(device_from_json(d) for d in devices),
            hints=tuple(_pick(Hint, h, _HINT_FIELDS) for h in hints),
        )
    except TypeError as exc:  # a required field missing in a nested object
        raise SchemaError(str(exc)) from None
