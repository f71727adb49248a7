"""The NVML backend: nvidia-ml-py (``pynvml``) readings turned into the model.

Costs are kept to what a bare pynvml script would pay for the same data: handles and static
facts are read once in open(); slow-changing values (limits, modes, PCIe maxima) are refreshed
every ``reads.SLOW_REFRESH_S``; a field the device does not support is asked once, then never again.

Failure policy: a per-field NOT_SUPPORTED / NO_PERMISSION is ``None``; GPU_IS_LOST marks that
device ``lost`` and any other NVML error marks it ``error`` (with the reason) while the others
keep sampling; such devices are retried after a backoff, re-initialising NVML first.
"""

from __future__ import annotations

import importlib
import math
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from gputop.backends.base import (
    CAP_ENERGY,
    CAP_POWER_LIMIT,
    CAP_PROCESSES,
    CAP_SATURATION,
    REAL_CLOCK,
    Backend,
    BackendError,
    BackendOptions,
    BackendUnavailable,
    Clock,
    NoPermission,
    Unsupported,
    hostname,
)
from gputop.backends.nvml import mig, procs, reads
from gputop.backends.nvml.gpm import NO_SATURATION, DeviceGpm, is_supported
from gputop.backends.nvml.links import LinkCounters, LinkRates
from gputop.backends.nvml.procs import ProcessBuffers
from gputop.backends.nvml.xid import XidEvents
from gputop.core.budget import EVERYTHING, LINK_RATES, Wants
from gputop.core.model import (
    Device,
    DeviceInfo,
    MigInstance,
    NodeInfo,
    Process,
    Saturation,
    Snapshot,
)
from gputop.core.units import MIB
from gputop.host.processes import HostProcesses

RETRY_FIRST_S = 2.0
RETRY_MAX_S = 60.0
SM_SAMPLE_TTL_S = 3.0  # a per-process SM% older than this is no longer shown

# What nvidia-smi says for the init failures people actually meet.
INIT_MESSAGES = {
    "NVML_ERROR_LIBRARY_NOT_FOUND": "libnvidia-ml.so.1 not found (is the NVIDIA driver "
                                    "installed?)",
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": "Driver/library version mismatch (reboot, or reload "
                                          "the nvidia kernel module, after a driver upgrade)",
    "NVML_ERROR_DRIVER_NOT_LOADED": "NVIDIA driver not loaded",
    "NVML_ERROR_NO_PERMISSION": "insufficient permissions to open the NVIDIA devices",
}
# nvidia-smi's exit status per NVML error (its man page, RETURN VALUE); anything else is 255,
# "other error or internal driver error". The man page gives 10 to the interrupt issue, which
# NVML numbers 11.
NVIDIA_SMI_EXIT = {
    "NVML_ERROR_INVALID_ARGUMENT": 2,
    "NVML_ERROR_NOT_SUPPORTED": 3,
    "NVML_ERROR_NO_PERMISSION": 4,
    "NVML_ERROR_NOT_FOUND": 6,
    "NVML_ERROR_INSUFFICIENT_POWER": 8,
    "NVML_ERROR_DRIVER_NOT_LOADED": 9,
    "NVML_ERROR_IRQ_ISSUE": 10,
    "NVML_ERROR_LIBRARY_NOT_FOUND": 12,
    "NVML_ERROR_FUNCTION_NOT_FOUND": 13,
    "NVML_ERROR_CORRUPTED_INFOROM": 14,
    "NVML_ERROR_GPU_IS_LOST": 15,
}
LIBRARY_NOT_FOUND_EXIT = 12
OTHER_ERROR_EXIT = 255
def _identity(info: DeviceInfo) -> dict[str, Any]:
    """What every snapshot of a device repeats of its static facts, answering or lost."""
    return dict(index=info.index, uuid=info.uuid, name=info.name, vendor="nvidia",
                pci_bus_id=info.pci_bus_id, memory_total_mib=info.memory_total_mib,
                power_limit_default_w=info.power_limit_default_w,
                power_limit_min_w=info.power_limit_min_w,
                power_limit_max_w=info.power_limit_max_w,
                clock_sm_max_mhz=info.clock_sm_max_mhz, clock_mem_max_mhz=info.clock_mem_max_mhz)


PROCESS_FUNCTIONS = {
    "C": ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
          "nvmlDeviceGetComputeRunningProcesses"),
    "G": ("nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2",
          "nvmlDeviceGetGraphicsRunningProcesses"),
}


class _Absent(Exception):
    """A field this device does not give (raised and caught inside this module only)."""


class _Gpu:
    """Mutable per-device state."""

    __slots__ = ("info", "handle", "status", "reason", "skip", "pci_ids", "values", "read_at",
                 "retry_at", "backoff", "util_seen", "sm", "gpm", "links", "memory_v2", "procs",
                 "mig")

    def __init__(self, info: DeviceInfo, handle: Any) -> None:
        self.info = info
        self.handle = handle
        self.status = "ok"
        self.reason: str | None = None
        self.skip: set[str] = set()  # fields this device does not give: never asked again
        self.pci_ids: tuple[int | None, int | None] = (None, None)  # device, subsystem
        self.values: dict[str, Any] = {}  # Device attribute -> its last reading
        self.read_at: dict[str, float] = {}  # read (gputop.backends.nvml.reads) -> when made
        self.retry_at = 0.0
        self.backoff = RETRY_FIRST_S
        self.util_seen = 0  # lastSeenTimeStamp of nvmlDeviceGetProcessUtilization (µs)
        self.sm: dict[int, tuple[float, int]] = {}  # pid -> (SM %, sample time µs)
        self.gpm: DeviceGpm | None = None
        self.links = LinkCounters()  # the link rates where there is no GPM
        self.memory_v2 = True
        self.procs = ProcessBuffers()
        self.mig: tuple[mig.MigSlot, ...] = ()  # its MIG devices while MIG is on


class NvmlBackend(Backend):
    name = "nvml"
    capabilities = frozenset({CAP_PROCESSES, CAP_SATURATION, CAP_POWER_LIMIT, CAP_ENERGY})

    def __init__(self, options: BackendOptions, nvml: Any = None, clock: Clock | None = None,
                 host: HostProcesses | None = None) -> None:
        self.options = options
        self.nv = nvml  # the pynvml module (tests hand in a fake)
        self.clock = clock or REAL_CLOCK
        self.host = host or HostProcesses()
        self._gpus: list[_Gpu] = []
        self._info: NodeInfo | None = None
        self._lock = threading.Lock()
        self._open = False
        self._proc_fn: dict[str, str | None] = {}  # "C"/"G" -> the wrapper that works here
        self._absent: tuple[int, ...] = ()
        self._transient: tuple[int, ...] = ()
        self._lost_code = -1
        self._direct = False  # our own buffers for process lists (procs.py)
        self._xids: XidEvents | None = None
        self._xids_polled_at: float | None = None

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        nv = self.nv
        if nv is None:
            if "pynvml" not in sys.modules:
                _require_library()
            try:
                nv = self.nv = importlib.import_module("pynvml")
            except ImportError:
                raise BackendUnavailable("NVML: nvidia-ml-py (pynvml) is not installed",
                                         LIBRARY_NOT_FOUND_EXIT) from None
        try:
            nv.nvmlInit()
        except nv.NVMLError as exc:
            raise BackendUnavailable(f"NVML: {init_message(nv, exc)}",
                                     nvidia_smi_exit_code(nv, exc)) from None
        except OSError as exc:  # a broken libnvidia-ml that fails to load
            raise BackendUnavailable(f"NVML: cannot load the library ({exc})",
                                     LIBRARY_NOT_FOUND_EXIT) from None
        self._open = True
        self._direct = procs.direct(nv)
        # pynvml's sampling wrappers raise NVMLError(NVML_SUCCESS) when the driver had nothing
        # to size a buffer for: no samples, like NOT_FOUND.
        self._transient = (nv.NVML_ERROR_NOT_FOUND, nv.NVML_ERROR_NO_DATA, nv.NVML_SUCCESS)
        self._absent = self._transient + (
            nv.NVML_ERROR_NOT_SUPPORTED, nv.NVML_ERROR_NO_PERMISSION,
            nv.NVML_ERROR_FUNCTION_NOT_FOUND, nv.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        self._lost_code = nv.NVML_ERROR_GPU_IS_LOST
        self._xids = XidEvents(nv, self._absent)
        try:
            driver = self.optional(nv.nvmlSystemGetDriverVersion)
            cuda = self.optional(nv.nvmlSystemGetCudaDriverVersion)
            count = nv.nvmlDeviceGetCount()
        except nv.NVMLError as exc:
            self.close()
            raise BackendUnavailable(f"NVML: cannot list the GPUs: {exc}",
                                     nvidia_smi_exit_code(nv, exc)) from None
        gpus = []
        for index in range(count):
            gpus.append(self._open_device(index))
        self._gpus = gpus
        self.capabilities = self._capabilities()
        cuda_text = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None
        self._info = NodeInfo(hostname(), self.name, reads.text(driver), cuda_text,
                              tuple(g.info for g in gpus))

    def _capabilities(self) -> frozenset[str]:
        """What this node can give, as found at open (not what NVML could give elsewhere)."""
        caps = {CAP_PROCESSES}
        ok = [g for g in self._gpus if g.status == "ok"]
        if any(g.gpm is not None for g in ok):
            caps.add(CAP_SATURATION)
        if any(g.info.power_limit_min_w is not None for g in ok):
            caps.add(CAP_POWER_LIMIT)  # settable in principle; root is still needed
        nv = self.nv
        for g in ok:
            try:
                if self.optional(nv.nvmlDeviceGetTotalEnergyConsumption, g.handle) is not None:
                    caps.add(CAP_ENERGY)
                    break
            except nv.NVMLError:
                continue
        return frozenset(caps)

    def _open_device(self, index: int) -> _Gpu:
        nv = self.nv
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(index)
        except nv.NVMLError as exc:
            gpu = _Gpu(DeviceInfo(index=index, vendor="nvidia"), None)
            self._mark(gpu, exc)
            return gpu
        gpu = _Gpu(DeviceInfo(index=index, vendor="nvidia"), handle)
        try:
            gpu.info, gpu.pci_ids = self._static(index, handle)
            if is_supported(nv, handle):
                self._read_now(gpu, "mig", self.clock.monotonic())
                self._new_gpm(gpu)
        except nv.NVMLError as exc:
            self._mark(gpu, exc)
        return gpu

    def _new_gpm(self, gpu: _Gpu) -> None:
        gpu.gpm = DeviceGpm(self.nv, gpu.handle, self.clock.sleep,
                            lambda: mig.gpu_instances(gpu.mig))
        self._prime_gpm(gpu)

    def _prime_gpm(self, gpu: _Gpu) -> None:
        """Take the first GPM sample now, so the first snapshot has one 100 ms old."""
        gpm = gpu.gpm
        assert gpm is not None
        try:
            gpm.prime(self.clock.monotonic(), gpu.values.get("mig_mode") == "enabled")
        except self.nv.NVMLError as exc:
            if exc.value == self._lost_code:
                raise
            gpm.close()
            gpu.gpm = None

    def _static(self, index: int, handle: Any) -> tuple[DeviceInfo, tuple[Any, Any]]:
        """What every consumer needs (DeviceInfo), and the PCI ids from the same struct."""
        nv = self.nv
        get = self.optional
        limits = get(nv.nvmlDeviceGetPowerManagementLimitConstraints, handle)
        lo, hi = (limits if limits else (None, None))
        memory = get(nv.nvmlDeviceGetMemoryInfo, handle)
        pci = get(nv.nvmlDeviceGetPciInfo, handle)
        info = DeviceInfo(
            index=index,
            uuid=reads.text(get(nv.nvmlDeviceGetUUID, handle)),
            name=reads.text(get(nv.nvmlDeviceGetName, handle)),
            vendor="nvidia",
            pci_bus_id=reads.text(pci.busId) if pci is not None else None,
            memory_total_mib=memory.total / MIB if memory is not None else None,
            power_limit_default_w=_watts(get(nv.nvmlDeviceGetPowerManagementDefaultLimit, handle)),
            power_limit_min_w=_watts(lo),
            power_limit_max_w=_watts(hi),
            clock_sm_max_mhz=get(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_SM),
            clock_mem_max_mhz=get(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_MEM),
        )
        return info, (pci.pciDeviceId, pci.pciSubSystemId) if pci is not None else (None, None)

    def close(self) -> None:
        for gpu in self._gpus:
            if gpu.gpm is not None:
                gpu.gpm.close()
                gpu.gpm = None
        if self._xids is not None:
            self._xids.close()
        if self._open:
            self._open = False
            try:
                self.nv.nvmlShutdown()
            except self.nv.NVMLError:
                pass

    def info(self) -> NodeInfo:
        if self._info is None:
            raise BackendError("NVML backend not open")
        return self._info

    # ------------------------------------------------------------------ field reads
    def optional(self, fn: Callable[..., Any], *args: Any) -> Any:
        """A call whose NOT_SUPPORTED/NO_PERMISSION... means "no value"; other errors raise."""
        try:
            return fn(*args)
        except self.nv.NVMLError as exc:
            if exc.value in self._absent:
                return None
            raise

    def field(self, gpu: _Gpu, key: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Like optional, and a field found absent is never asked for again on this device."""
        if key in gpu.skip:
            return None
        try:
            return fn(*args)
        except self.nv.NVMLError as exc:
            if exc.value not in self._absent:
                raise
            if exc.value not in self._transient:  # NOT_FOUND/NO_DATA: nothing *yet*
                gpu.skip.add(key)
            return None
        except AttributeError:  # an older binding without this wrapper
            gpu.skip.add(key)
            return None

    # ------------------------------------------------------------------ sampling
    def sample(self, devices: Sequence[int] | None = None, *,
               wants: Wants | None = EVERYTHING) -> Snapshot:
        info = self.info()
        clock = self.clock
        due = reads.periods(wants)
        with self._lock:
            now = clock.monotonic()
            wanted = range(len(self._gpus)) if devices is None else devices
            self._recover(now)
            xid_every = min(due.get("xid_last", math.inf), due.get("xid_events", math.inf))
            if xid_every < math.inf and self._xids is not None \
                    and reads.due(xid_every, self._xids_polled_at, now):
                # drained on the wanted schedule (one call for the whole node); the last Xid
                # seen is reported in between, each event once, by the sample after its drain
                self._xids.poll([(g.info.index, g.handle) for g in self._gpus if g.status == "ok"],
                                clock.wall, keep="xid_events" in due)
                self._xids_polled_at = now
            out = []
            live: list[int] = []
            for i in wanted:
                gpu = self._gpus[i]
                if gpu.status == "ok":
                    try:
                        dev = self._device(gpu, now, due)
                    except self.nv.NVMLError as exc:
                        self._mark(gpu, exc)
                        dev = self._down(gpu, due)
                else:
                    dev = self._down(gpu, due)
                out.append(dev)
                live.extend(p.pid for p in dev.processes)
            if "processes" in due:  # else no pid was looked up: the cache must outlive this
                self.host.prune(live)
        return Snapshot(host=info.host, time=clock.wall(), backend=self.name, devices=tuple(out),
                        driver_version=info.driver_version, cuda_version=info.cuda_version)

    def _device(self, gpu: _Gpu, now: float, due: dict[str, float]) -> Device:
        values = gpu.values
        for read in reads.fresh(due, gpu.read_at, now):
            self._read_now(gpu, read, now)
        shown: dict[str, Any] = {attr: values.get(attr)
                 for read in due if read in reads.READS for attr in reads.READS[read].attrs}
        info = gpu.info
        saturation: Saturation = NO_SATURATION
        processes: tuple[Process, ...] = ()
        if "saturation" in due:
            if reads.due(due["saturation"], gpu.read_at.get("saturation"), now):
                values["saturation"] = self._saturation(gpu, values.get("mig_mode"))
                gpu.read_at["saturation"] = now
            saturation = values["saturation"]
        if LINK_RATES in due and gpu.gpm is None:
            saturation = replace(saturation,
                                 **self._link_rates(gpu, now, due[LINK_RATES])._asdict())
        if "processes" in due:
            if reads.due(due["processes"], gpu.read_at.get("processes"), now):
                values["processes"] = self._processes(gpu)
                gpu.read_at["processes"] = now
            processes = values["processes"]
        instances: tuple[MigInstance, ...] = ()
        if "mig_instances" in due and gpu.mig:
            if reads.due(due["mig_instances"], gpu.read_at.get("mig_instances"), now):
                values["mig_memory"] = [mig.memory(self._on_mig_device(
                    gpu, self.nv.nvmlDeviceGetMemoryInfo, s.handle)) for s in gpu.mig]
                gpu.read_at["mig_instances"] = now
            instances = self._instances(gpu, values["mig_memory"], processes, saturation)
        xid = self._xids.last(info.index) if "xid_last" in due and self._xids else None
        xid_events = self._xids.take(info.index) if "xid_events" in due and self._xids else ()
        return Device(
            **_identity(info),
            pci_device_id=gpu.pci_ids[0],
            pci_sub_device_id=gpu.pci_ids[1],
            saturation=saturation,
            processes=processes,
            mig_instances=instances,
            xid_last=xid,
            xid_events=xid_events,
            **shown,
        )

    def _on_mig_device(self, gpu: _Gpu, fn: Callable[..., Any], *args: Any) -> Any:
        """A read on a MIG device's handle. A handle that stopped answering (the GPU was
        re-partitioned since the layout was probed) gives None and has the layout probed again
        on the next tick, rather than marking the whole GPU failed."""
        try:
            return self.optional(fn, *args)
        except self.nv.NVMLError as exc:
            if exc.value == self._lost_code:
                raise
            gpu.read_at.pop("mig", None)
            return None

    def _instances(self, gpu: _Gpu, memory: list[tuple[float | None, float | None]],
                   processes: tuple[Process, ...],
                   saturation: Saturation) -> tuple[MigInstance, ...]:
        """The MIG devices with their memory, their share of the processes and, where GPM
        read this tick, their GPU instance's saturation."""
        by_gi = gpu.gpm.by_gi if gpu.gpm is not None and saturation.source else {}
        out = []
        for slot, (total, used) in zip(gpu.mig, memory):
            ids = (slot.gpu_instance_id, slot.compute_instance_id)
            out.append(MigInstance(
                gpu_instance_id=slot.gpu_instance_id,
                compute_instance_id=slot.compute_instance_id,
                index=slot.index,
                profile=slot.profile,
                uuid=slot.uuid,
                sm_count=slot.sm_count,
                memory_total_mib=total,
                memory_used_mib=used,
                saturation=by_gi.get(slot.gpu_instance_id, NO_SATURATION),
                processes=tuple(p for p in processes
                                if (p.gpu_instance_id, p.compute_instance_id) == ids),
            ))
        return tuple(out)

    def call(self, gpu: _Gpu, key: str, name: str, *args: Any, older: str | None = None) -> Any:
        """field on the wrapper called ``name`` (else ``older``, its name in bindings before it
        was renamed); a binding with neither gives None, and is not asked again."""
        # getattr on pynvml (foreign): which wrappers a binding has depends on its version
        fn = getattr(self.nv, name, None)
        if fn is None and older is not None:
            fn = getattr(self.nv, older, None)
        if fn is None:
            gpu.skip.add(key)
            return None
        return self.field(gpu, key, fn, gpu.handle, *args)

    def _read_now(self, gpu: _Gpu, read: str, now: float) -> None:
        gpu.values.update(reads.make(self, gpu, read))
        gpu.read_at[read] = now

    def _link_rates(self, gpu: _Gpu, now: float, period: float) -> LinkRates:
        """The PCIe and NVLink rates of a GPU without GPM, from the driver's link counters
        (links.py). One source per figure: where GPM answers, its rates stand and these calls
        are not made; where neither answers, N/A."""
        values = gpu.values
        if reads.due(period, gpu.read_at.get(LINK_RATES), now):
            values[LINK_RATES] = gpu.links.read(self, gpu)
            gpu.read_at[LINK_RATES] = now
        return values[LINK_RATES]

    def _saturation(self, gpu: _Gpu, mig: str | None) -> Saturation:
        gpm = gpu.gpm
        if gpm is None:
            return NO_SATURATION
        nv = self.nv
        try:
            return gpm.saturation(self.clock.monotonic, mig == "enabled")
        except nv.NVMLError as exc:
            if exc.value == self._lost_code:
                raise
            if exc.value in (nv.NVML_ERROR_NOT_SUPPORTED, nv.NVML_ERROR_FUNCTION_NOT_FOUND,
                             nv.NVML_ERROR_ARGUMENT_VERSION_MISMATCH):
                gpm.close()
                gpu.gpm = None
            return NO_SATURATION

    # ------------------------------------------------------------------ processes
    def _running(self, gpu: _Gpu, kind: str, handle: Any,
                 buffers: ProcessBuffers) -> list[tuple[int, Any]]:
        """(pid, used bytes) of the compute ("C") or graphics ("G") processes on ``handle`` (the
        GPU's, or one of its MIG devices') via the newest function that works here: _v3, else
        _v2, else the unsuffixed one (driver 535.98 changed the struct)."""
        nv = self.nv
        chosen = self._proc_fn.get(kind, "")
        if chosen:
            return self.field(gpu, "procs" + kind, self._list_reader(chosen),
                               handle, buffers) or []
        if chosen is None:
            return []
        for name in PROCESS_FUNCTIONS[kind]:
            if getattr(nv, name, None) is None:
                continue
            try:
                procs = self._list_reader(name)(handle, buffers)
            except nv.NVMLError as exc:
                if exc.value in (nv.NVML_ERROR_FUNCTION_NOT_FOUND,
                                 nv.NVML_ERROR_ARGUMENT_VERSION_MISMATCH):
                    continue
                if exc.value in self._absent:
                    gpu.skip.add("procs" + kind)
                    return []
                raise
            except getattr(nv, "NVMLLibraryMismatchError", ()):
                continue
            self._proc_fn[kind] = name
            return procs
        self._proc_fn[kind] = None
        return []

    def _list_reader(self, name: str) -> Callable[[Any, ProcessBuffers], list[tuple[int, Any]]]:
        """One call per tick through our own buffer where the binding allows (procs.py), else
        pynvml's wrapper (two calls)."""
        nv = self.nv
        if self._direct and name in procs.DIRECT_LISTS:
            return lambda handle, buffers: procs.running(nv, name, handle, buffers)
        fn = getattr(nv, name)
        return lambda handle, buffers: [(p.pid, p.usedGpuMemory) for p in fn(handle)]

    def _lists(self, gpu: _Gpu) -> list[tuple[Any, ProcessBuffers, str, int | None, int | None]]:
        """(handle, buffers, kinds, GI id, CI id) of each process list to read: the GPU's
        compute and graphics lists, or under MIG each MIG device's compute list (graphics does
        not run in MIG instances)."""
        if gpu.mig:
            return [(s.handle, s.buffers, "C", s.gpu_instance_id, s.compute_instance_id)
                    for s in gpu.mig]
        return [(gpu.handle, gpu.procs, "CG", None, None)]

    def _processes(self, gpu: _Gpu) -> tuple[Process, ...]:
        merged: dict[int, list] = {}
        for handle, buffers, kinds, gi, ci in self._lists(gpu):
            for kind in kinds:
                if "procs" + kind in gpu.skip:
                    continue
                if gi is None:
                    listed = self._running(gpu, kind, handle, buffers)
                else:
                    listed = self._on_mig_device(gpu, self._running, gpu, kind, handle,
                                                 buffers) or []
                for pid, used in listed:
                    entry = merged.get(pid)
                    if entry is None:
                        merged[pid] = [used, kind, gi, ci]
                    else:
                        if used is not None and (entry[0] is None or used > entry[0]):
                            entry[0] = used
                        if kind not in entry[1]:
                            entry[1] += "+" + kind
        if not merged:
            gpu.sm.clear()
            return ()
        sm = self._process_sm(gpu, merged)
        facts_by_pid = self.host.lookup_device(gpu.info.pci_bus_id, merged)
        out = []
        for pid, (used, kind, gi, ci) in merged.items():
            out.append(facts_by_pid[pid].process(
                pid, gpu_memory_mib=used / MIB if used is not None else None,
                sm_pct=sm.get(pid), type=kind, gpu_instance_id=gi, compute_instance_id=ci))
        return tuple(out)

    def _process_sm(self, gpu: _Gpu, pids: dict[int, Any]) -> dict[int, float]:
        """Per-process SM% from the driver's samples newer than the last one seen."""
        nv = self.nv
        cache = gpu.sm
        if "proc_util" not in gpu.skip:
            # NOT_FOUND: no sample since lastSeenTimeStamp, which is not an error
            if self._direct:
                samples = self.field(gpu, "proc_util", procs.utilization, nv, gpu.handle,
                                      gpu.util_seen, gpu.procs)
            else:
                samples = self.field(gpu, "proc_util", _utilization, nv, gpu.handle,
                                      gpu.util_seen)
            for pid, ts, sm in samples or ():
                old = cache.get(pid)
                if old is None or ts >= old[1]:
                    cache[pid] = (float(sm), ts)
                if ts > gpu.util_seen:
                    gpu.util_seen = ts
        if not cache:
            return {}
        oldest = int(self.clock.wall() * 1e6 - SM_SAMPLE_TTL_S * 1e6)
        out = {}
        for pid in list(cache):
            value, ts = cache[pid]
            if pid not in pids or ts < oldest:
                del cache[pid]
            else:
                out[pid] = value
        return out

    # ------------------------------------------------------------------ failures
    def _mark(self, gpu: _Gpu, exc: Exception) -> None:
        nv = self.nv
        code = getattr(exc, "value", None)  # an NVMLError's code; other errors have none
        if code == self._lost_code:
            gpu.status, gpu.reason = "lost", "GPU is lost (fallen off the bus)"
        else:
            gpu.status, gpu.reason = "error", f"NVML: {exc}"
        if code == getattr(nv, "NVML_ERROR_UNKNOWN", None):
            gpu.reason = "NVML: Unknown Error"
        gpu.retry_at = self.clock.monotonic() + gpu.backoff
        gpu.backoff = min(RETRY_MAX_S, gpu.backoff * 2)

    def _down(self, gpu: _Gpu, due: dict[str, float]) -> Device:
        # its minor number as read while it answered: Slurm's view of a job needs it most
        # when one of the job's GPUs is lost; the Xids drained before it went (an Xid 79
        # comes as its GPU falls off the bus) say why
        xids = self._xids.take(gpu.info.index) if "xid_events" in due and self._xids else ()
        return Device(**_identity(gpu.info), status=gpu.status, status_reason=gpu.reason,
                      minor_number=gpu.values.get("minor_number"), xid_events=xids)

    def _recover(self, now: float) -> None:
        """Retry failed devices whose backoff has passed, re-initialising NVML once first."""
        due = [g for g in self._gpus if g.status != "ok" and now >= g.retry_at]
        if not due:
            return
        nv = self.nv
        if self._xids is not None:
            self._xids.close()  # a set does not outlive nvmlShutdown; the next poll makes one
        try:
            try:
                nv.nvmlShutdown()
            except nv.NVMLError:
                pass
            nv.nvmlInit()
        except nv.NVMLError as exc:
            for gpu in due:
                self._mark(gpu, exc)
            return
        # After a re-init every GPM sample is stale: take fresh baselines everywhere.
        for gpu in self._gpus:
            if gpu.gpm is not None:
                gpu.gpm.close()
                gpu.gpm = None
        for gpu in self._gpus:
            was_down = gpu in due
            if gpu.status != "ok" and not was_down:
                continue
            try:
                gpu.handle = self._handle(gpu)
                if was_down:
                    if gpu.info.uuid is None:
                        gpu.info, gpu.pci_ids = self._static(gpu.info.index, gpu.handle)
                    gpu.read_at.clear()  # everything is read afresh on this tick
                # MIG handles from before the re-init are dead: probe the layout again
                gpu.mig = ()
                gpu.read_at.pop("mig", None)
                if is_supported(nv, gpu.handle):
                    self._read_now(gpu, "mig", now)
                    self._new_gpm(gpu)
            except nv.NVMLError as exc:
                self._mark(gpu, exc)
                continue
            if was_down:
                gpu.status, gpu.reason = "ok", None
                gpu.backoff = RETRY_FIRST_S
                gpu.skip.clear()
                gpu.util_seen = 0
                gpu.links = LinkCounters()  # a reading from before it fell off is no baseline

    def _handle(self, gpu: _Gpu) -> Any:
        nv = self.nv
        if gpu.info.uuid:  # by UUID: the index may have moved if another GPU fell off
            return nv.nvmlDeviceGetHandleByUUID(gpu.info.uuid)
        return nv.nvmlDeviceGetHandleByIndex(gpu.info.index)

    # ------------------------------------------------------------------ power limit
    def set_power_limit(self, device: int, watts: float) -> None:
        info = self.info()
        if not 0 <= device < len(info.devices):
            raise BackendError(f"no GPU {device}")
        gpu = self._gpus[device]
        lo, hi = gpu.info.power_limit_min_w, gpu.info.power_limit_max_w
        if lo is not None and hi is not None and not lo <= watts <= hi:
            raise BackendError(
                f"power limit {watts:g} W for GPU {device} is outside its range {lo:g}-{hi:g} W")
        nv = self.nv
        with self._lock:
            if gpu.handle is None or gpu.status == "lost":
                raise BackendError(f"GPU {device} is {gpu.status}: cannot set its power limit")
            try:
                nv.nvmlDeviceSetPowerManagementLimit(gpu.handle, int(round(watts * 1000)))
            except nv.NVMLError as exc:
                code = exc.value
                if code == nv.NVML_ERROR_NO_PERMISSION:
                    raise NoPermission(
                        f"setting the power limit of GPU {device} needs root "
                        "(or CAP_SYS_ADMIN): NVML says Insufficient Permissions") from None
                if code in (nv.NVML_ERROR_NOT_SUPPORTED, nv.NVML_ERROR_FUNCTION_NOT_FOUND):
                    raise Unsupported(
                        f"GPU {device} does not support setting a power limit") from None
                if code == nv.NVML_ERROR_INVALID_ARGUMENT:
                    raise BackendError(
                        f"NVML refused a power limit of {watts:g} W for GPU {device}") from None
                self._mark(gpu, exc)
                raise BackendError(f"GPU {device}: setting the power limit failed: {exc}") from None
            gpu.read_at.pop("limit", None)  # read the new enforced limit on the next tick


def _utilization(nv: Any, handle: Any, since: int) -> list[tuple[int, int, int]]:
    return [(s.pid, s.timeStamp, s.smUtil)
            for s in nv.nvmlDeviceGetProcessUtilization(handle, since)]


def _require_library() -> None:
    """Fail fast where libnvidia-ml cannot load, before paying ~30 ms to import pynvml: the
    auto-detection of every command on a machine without NVIDIA GPUs goes through here."""
    if not sys.platform.startswith("linux"):
        return  # pynvml knows where Windows keeps nvml.dll
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")  # what pynvml loads; stays loaded for it
    except OSError:
        raise BackendUnavailable(
            "NVML: " + INIT_MESSAGES["NVML_ERROR_LIBRARY_NOT_FOUND"], LIBRARY_NOT_FOUND_EXIT) from None


def nvidia_smi_exit_code(nv: Any, exc: Exception) -> int:
    """nvidia-smi's exit status for an NVML error, from its man page (RETURN VALUE)."""
    code = getattr(exc, "value", None)
    for name, status in NVIDIA_SMI_EXIT.items():
        if code is not None and code == getattr(nv, name, object()):
            return status
    return OTHER_ERROR_EXIT


def init_message(nv: Any, exc: Exception) -> str:
    code = getattr(exc, "value", None)
    for name, text in INIT_MESSAGES.items():
        if code is not None and code == getattr(nv, name, object()):
            return text
    return str(exc)


def _watts(milliwatts: int | None) -> float | None:
    return milliwatts / 1000.0 if milliwatts is not None else None
