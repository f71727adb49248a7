"""The NVML backend: nvidia-ml-py (``pynvml``) readings turned into the model.

Costs are kept to what a bare pynvml script would pay for the same data: handles and static
facts are read once in open(); slow-changing values (limits, modes, PCIe maxima) are refreshed
every ``SLOW_REFRESH_S``; a field the device does not support is asked once, then never again.

Failure policy: a per-field NOT_SUPPORTED / NO_PERMISSION is ``None``; GPU_IS_LOST marks that
device ``lost`` and any other NVML error marks it ``error`` (with the reason) while the others
keep sampling; such devices are retried after a backoff, re-initialising NVML first.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from gputop import clock_events
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
from gputop.backends.hostproc import HostProcesses
from gputop.backends.nvml.gpm import NO_SATURATION, DeviceGpm, is_supported
from gputop.model import Device, DeviceInfo, NodeInfo, Process, Saturation, Snapshot

MIB = 1024 * 1024
SLOW_REFRESH_S = 10.0
RETRY_FIRST_S = 2.0
RETRY_MAX_S = 60.0
SM_SAMPLE_TTL_S = 3.0  # a per-process SM% older than this is no longer shown

COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
# What nvidia-smi says for the init failures people actually meet.
INIT_MESSAGES = {
    "NVML_ERROR_LIBRARY_NOT_FOUND": "libnvidia-ml.so.1 not found (is the NVIDIA driver "
                                    "installed?)",
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": "Driver/library version mismatch (reboot, or reload "
                                          "the nvidia kernel module, after a driver upgrade)",
    "NVML_ERROR_DRIVER_NOT_LOADED": "NVIDIA driver not loaded",
    "NVML_ERROR_NO_PERMISSION": "insufficient permissions to open the NVIDIA devices",
}
# ECC error counters: model attribute -> (NVML error type, counter type) constant names.
ECC_COUNTERS = {
    "ecc_errors_corrected_volatile": ("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_VOLATILE_ECC"),
    "ecc_errors_uncorrected_volatile": ("NVML_MEMORY_ERROR_TYPE_UNCORRECTED",
                                        "NVML_VOLATILE_ECC"),
    "ecc_errors_corrected_aggregate": ("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_AGGREGATE_ECC"),
    "ecc_errors_uncorrected_aggregate": ("NVML_MEMORY_ERROR_TYPE_UNCORRECTED",
                                         "NVML_AGGREGATE_ECC"),
}
NO_STATIC: dict[str, Any] = {"pci_device_id": None, "pci_sub_device_id": None,
                             "compute_capability": None, "clock_graphics_max_mhz": None,
                             "clock_event_supported_mask": None}
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

    __slots__ = ("info", "handle", "status", "reason", "skip", "static", "slow", "slow_at",
                 "retry_at", "backoff", "util_seen", "sm", "gpm", "memory_v2")

    def __init__(self, info: DeviceInfo, handle: Any) -> None:
        self.info = info
        self.handle = handle
        self.status = "ok"
        self.reason: str | None = None
        self.skip: set[str] = set()  # fields this device does not give: never asked again
        self.static: dict[str, Any] = dict(NO_STATIC)  # facts read once, beyond DeviceInfo
        self.slow: dict[str, Any] = {}
        self.slow_at = float("-inf")
        self.retry_at = 0.0
        self.backoff = RETRY_FIRST_S
        self.util_seen = 0  # lastSeenTimeStamp of nvmlDeviceGetProcessUtilization (µs)
        self.sm: dict[int, tuple[float, int]] = {}  # pid -> (SM %, sample time µs)
        self.gpm: DeviceGpm | None = None
        self.memory_v2 = True


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

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        nv = self.nv
        if nv is None:
            if "pynvml" not in sys.modules:
                _require_library()
            try:
                nv = self.nv = importlib.import_module("pynvml")
            except ImportError:
                raise BackendUnavailable("NVML: nvidia-ml-py (pynvml) is not installed") from None
        try:
            nv.nvmlInit()
        except nv.NVMLError as exc:
            raise BackendUnavailable(f"NVML: {init_message(nv, exc)}") from None
        except OSError as exc:  # a broken libnvidia-ml that fails to load
            raise BackendUnavailable(f"NVML: cannot load the library ({exc})") from None
        self._open = True
        # pynvml's sampling wrappers raise NVMLError(NVML_SUCCESS) when the driver had nothing
        # to size a buffer for: no samples, like NOT_FOUND.
        self._transient = (nv.NVML_ERROR_NOT_FOUND, nv.NVML_ERROR_NO_DATA, nv.NVML_SUCCESS)
        self._absent = self._transient + (
            nv.NVML_ERROR_NOT_SUPPORTED, nv.NVML_ERROR_NO_PERMISSION,
            nv.NVML_ERROR_FUNCTION_NOT_FOUND, nv.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        self._lost_code = nv.NVML_ERROR_GPU_IS_LOST
        try:
            driver = self._optional(nv.nvmlSystemGetDriverVersion)
            cuda = self._optional(nv.nvmlSystemGetCudaDriverVersion)
            count = nv.nvmlDeviceGetCount()
        except nv.NVMLError as exc:
            self.close()
            raise BackendUnavailable(f"NVML: cannot list the GPUs: {exc}") from None
        gpus = []
        for index in range(count):
            gpus.append(self._open_device(index))
        self._gpus = gpus
        self.capabilities = self._capabilities()
        cuda_text = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None
        self._info = NodeInfo(hostname(), self.name, _text(driver), cuda_text,
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
                if self._optional(nv.nvmlDeviceGetTotalEnergyConsumption, g.handle) is not None:
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
            gpu.info, gpu.static = self._static(index, handle)
            self._refresh_slow(gpu, self.clock.monotonic())
            if is_supported(nv, handle):
                gpu.gpm = DeviceGpm(nv, handle, self.clock.sleep)
                self._prime_gpm(gpu)
        except nv.NVMLError as exc:
            self._mark(gpu, exc)
        return gpu

    def _prime_gpm(self, gpu: _Gpu) -> None:
        """Take the first GPM sample now, so the first snapshot has one 100 ms old."""
        gpm = gpu.gpm
        assert gpm is not None
        try:
            gpm.prime(self.clock.monotonic(), bool(gpu.slow.get("mig_mode")))
        except self.nv.NVMLError as exc:
            if exc.value == self._lost_code:
                raise
            gpm.close()
            gpu.gpm = None

    def _static(self, index: int, handle: Any) -> tuple[DeviceInfo, dict[str, Any]]:
        """What every consumer needs (DeviceInfo), and the facts only query mode prints."""
        nv = self.nv
        get = self._optional
        limits = get(nv.nvmlDeviceGetPowerManagementLimitConstraints, handle)
        lo, hi = (limits if limits else (None, None))
        memory = get(nv.nvmlDeviceGetMemoryInfo, handle)
        pci = get(nv.nvmlDeviceGetPciInfo, handle)
        info = DeviceInfo(
            index=index,
            uuid=_text(get(nv.nvmlDeviceGetUUID, handle)),
            name=_text(get(nv.nvmlDeviceGetName, handle)),
            vendor="nvidia",
            pci_bus_id=_text(pci.busId) if pci is not None else None,
            memory_total_mib=memory.total / MIB if memory is not None else None,
            power_limit_default_w=_watts(get(nv.nvmlDeviceGetPowerManagementDefaultLimit, handle)),
            power_limit_min_w=_watts(lo),
            power_limit_max_w=_watts(hi),
            clock_sm_max_mhz=get(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_SM),
            clock_mem_max_mhz=get(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_MEM),
        )
        return info, self._static_extra(handle, pci)

    def _static_extra(self, handle: Any, pci: Any) -> dict[str, Any]:
        """PCI ids (from the struct _static read), compute capability, graphics clock maximum,
        the event reasons this GPU can report: asked once, None where NVML has no answer."""
        nv = self.nv
        get = self._optional_wrapper
        cc = get("nvmlDeviceGetCudaComputeCapability", handle)
        supported = get("nvmlDeviceGetSupportedClocksEventReasons", handle,
                        older="nvmlDeviceGetSupportedClocksThrottleReasons")
        return {
            "pci_device_id": pci.pciDeviceId if pci is not None else None,
            "pci_sub_device_id": pci.pciSubSystemId if pci is not None else None,
            "compute_capability": f"{cc[0]}.{cc[1]}" if cc is not None else None,
            "clock_graphics_max_mhz": get("nvmlDeviceGetMaxClockInfo", handle,
                                          nv.NVML_CLOCK_GRAPHICS),
            "clock_event_supported_mask": supported,
        }

    def close(self) -> None:
        for gpu in self._gpus:
            if gpu.gpm is not None:
                gpu.gpm.close()
                gpu.gpm = None
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
    def _optional(self, fn: Callable[..., Any], *args: Any) -> Any:
        """A call whose NOT_SUPPORTED/NO_PERMISSION... means "no value"; other errors raise."""
        try:
            return fn(*args)
        except self.nv.NVMLError as exc:
            if exc.value in self._absent:
                return None
            raise

    def _optional_wrapper(self, name: str, *args: Any, older: str | None = None) -> Any:
        """_optional on the wrapper called ``name`` (else ``older``, its name in bindings before
        it was renamed); None where the installed binding has neither."""
        fn = getattr(self.nv, name, None)
        if fn is None and older is not None:
            fn = getattr(self.nv, older, None)
        return None if fn is None else self._optional(fn, *args)

    def _field(self, gpu: _Gpu, key: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Like _optional, and a field found absent is never asked for again on this device."""
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

    def _refresh_slow(self, gpu: _Gpu, now: float) -> None:
        nv, h, f = self.nv, gpu.handle, self._field
        old = gpu.slow
        ecc = f(gpu, "ecc", nv.nvmlDeviceGetEccMode, h)
        mig = f(gpu, "mig", nv.nvmlDeviceGetMigMode, h)
        persistence = f(gpu, "persistence", nv.nvmlDeviceGetPersistenceMode, h)
        mode = f(gpu, "compute_mode", nv.nvmlDeviceGetComputeMode, h)
        limit = _watts(f(gpu, "limit", nv.nvmlDeviceGetEnforcedPowerLimit, h))
        gpu.slow = {
            "power_limit_w": limit,
            "ecc_mode": bool(ecc[0]) if ecc is not None else None,
            "ecc_mode_pending": bool(ecc[1]) if ecc is not None else None,
            "mig_mode": bool(mig[0]) if mig is not None else None,
            "mig_mode_pending": bool(mig[1]) if mig is not None else None,
            "persistence_mode": bool(persistence) if persistence is not None else None,
            "compute_mode": COMPUTE_MODES.get(mode) if mode is not None else None,
            "pcie_gen_max": f(gpu, "pcie_gen_max", nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
            "pcie_width_max": f(gpu, "pcie_width_max", nv.nvmlDeviceGetMaxPcieLinkWidth, h),
        }
        # Counters exist only while ECC is on (NVML: "Requires ECC Mode to be enabled"); with it
        # off they are not asked, so that turning ECC on (and resetting) finds them again.
        ecc_on = ecc is None or bool(ecc[0])
        for attr, (error_type, counter_type) in ECC_COUNTERS.items():
            gpu.slow[attr] = f(gpu, attr, nv.nvmlDeviceGetTotalEccErrors, h,
                               getattr(nv, error_type), getattr(nv, counter_type)) \
                if ecc_on else None
        # static: read with the first refresh only
        gpu.slow["serial"] = old["serial"] if "serial" in old else _text(
            f(gpu, "serial", nv.nvmlDeviceGetSerial, h))
        gpu.slow["vbios_version"] = old["vbios_version"] if "vbios_version" in old else _text(
            f(gpu, "vbios", nv.nvmlDeviceGetVbiosVersion, h))
        gpu.slow_at = now

    # ------------------------------------------------------------------ sampling
    def sample(self, devices: Sequence[int] | None = None, *, detail: bool = True) -> Snapshot:
        info = self.info()
        clock = self.clock
        with self._lock:
            now = clock.monotonic()
            wanted = range(len(self._gpus)) if devices is None else devices
            self._recover(now)
            out = []
            live: list[int] = []
            for i in wanted:
                gpu = self._gpus[i]
                if gpu.status == "ok":
                    try:
                        dev = self._device(gpu, now, detail)
                    except self.nv.NVMLError as exc:
                        self._mark(gpu, exc)
                        dev = self._down(gpu)
                else:
                    dev = self._down(gpu)
                out.append(dev)
                live.extend(p.pid for p in dev.processes)
            if detail:  # without it no pid was looked up, and the cache must outlive this sample
                self.host.prune(live)
        return Snapshot(host=info.host, time=clock.wall(), backend=self.name, devices=tuple(out),
                        driver_version=info.driver_version, cuda_version=info.cuda_version)

    def _device(self, gpu: _Gpu, now: float, detail: bool = True) -> Device:
        nv, h, f = self.nv, gpu.handle, self._field
        if now - gpu.slow_at >= SLOW_REFRESH_S:
            self._refresh_slow(gpu, now)
        slow = gpu.slow
        info = gpu.info
        used = reserved = None
        memory = None
        if gpu.memory_v2:
            memory = f(gpu, "memory_v2", nv.nvmlDeviceGetMemoryInfo, h, nv.nvmlMemory_v2)
            if memory is None:
                gpu.memory_v2 = False  # driver older than the v2 struct: v1 from now on
            else:
                used, reserved = memory.used / MIB, memory.reserved / MIB
        if memory is None:
            memory = f(gpu, "memory", nv.nvmlDeviceGetMemoryInfo, h)
            if memory is not None:
                used = memory.used / MIB  # v1 counts the driver's reservation as used
        # NVML's own free figure, as nvidia-smi prints it: the real H100 capture's memory.free
        # is 1 MiB more than total - reserved - used
        free = memory.free / MIB if memory is not None else None
        util = f(gpu, "util", nv.nvmlDeviceGetUtilizationRates, h)
        encoder = f(gpu, "encoder", nv.nvmlDeviceGetEncoderUtilization, h)  # [%, period µs]
        decoder = f(gpu, "decoder", nv.nvmlDeviceGetDecoderUtilization, h)
        mem_temp = None
        if "memory_temp" not in gpu.skip:
            mem_temp = self._memory_temperature(gpu)
        pstate = f(gpu, "pstate", nv.nvmlDeviceGetPerformanceState, h)
        mask = self._event_mask(gpu)
        power = f(gpu, "power", nv.nvmlDeviceGetPowerUsage, h)
        energy = f(gpu, "energy", nv.nvmlDeviceGetTotalEnergyConsumption, h)
        saturation = self._saturation(gpu, slow.get("mig_mode")) if detail else NO_SATURATION
        static = gpu.static
        return Device(
            index=info.index,
            uuid=info.uuid,
            name=info.name,
            vendor="nvidia",
            pci_bus_id=info.pci_bus_id,
            memory_total_mib=info.memory_total_mib,
            memory_used_mib=used,
            memory_reserved_mib=reserved,
            utilization_gpu_pct=util.gpu if util is not None else None,
            utilization_memory_pct=util.memory if util is not None else None,
            temperature_c=f(gpu, "temp", self._temperature, h, nv.NVML_TEMPERATURE_GPU),
            temperature_memory_c=mem_temp,
            fan_pct=f(gpu, "fan", nv.nvmlDeviceGetFanSpeed, h),
            power_draw_w=power / 1000.0 if power is not None else None,
            power_limit_w=slow["power_limit_w"],
            power_limit_default_w=info.power_limit_default_w,
            power_limit_min_w=info.power_limit_min_w,
            power_limit_max_w=info.power_limit_max_w,
            energy_j=energy / 1000.0 if energy is not None else None,
            clock_sm_mhz=f(gpu, "clock_sm", nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
            clock_mem_mhz=f(gpu, "clock_mem", nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM),
            clock_sm_max_mhz=info.clock_sm_max_mhz,
            clock_mem_max_mhz=info.clock_mem_max_mhz,
            pstate=f"P{pstate}" if pstate is not None and 0 <= pstate <= 15 else None,
            clock_event_reasons=clock_events.decode(mask) if mask is not None else None,
            clock_event_mask=mask,
            pcie_gen=f(gpu, "pcie_gen", nv.nvmlDeviceGetCurrPcieLinkGeneration, h),
            pcie_gen_max=slow["pcie_gen_max"],
            pcie_width=f(gpu, "pcie_width", nv.nvmlDeviceGetCurrPcieLinkWidth, h),
            pcie_width_max=slow["pcie_width_max"],
            ecc_mode=slow["ecc_mode"],
            persistence_mode=slow["persistence_mode"],
            mig_mode=slow["mig_mode"],
            compute_mode=slow["compute_mode"],
            serial=slow["serial"],
            vbios_version=slow["vbios_version"],
            pci_device_id=static["pci_device_id"],
            pci_sub_device_id=static["pci_sub_device_id"],
            compute_capability=static["compute_capability"],
            memory_free_mib=free,
            utilization_encoder_pct=encoder[0] if encoder is not None else None,
            utilization_decoder_pct=decoder[0] if decoder is not None else None,
            clock_graphics_mhz=f(gpu, "clock_graphics", nv.nvmlDeviceGetClockInfo, h,
                                 nv.NVML_CLOCK_GRAPHICS),
            clock_video_mhz=f(gpu, "clock_video", nv.nvmlDeviceGetClockInfo, h,
                              nv.NVML_CLOCK_VIDEO),
            clock_graphics_max_mhz=static["clock_graphics_max_mhz"],
            clock_event_supported_mask=static["clock_event_supported_mask"],
            ecc_mode_pending=slow["ecc_mode_pending"],
            mig_mode_pending=slow["mig_mode_pending"],
            ecc_errors_corrected_volatile=slow["ecc_errors_corrected_volatile"],
            ecc_errors_uncorrected_volatile=slow["ecc_errors_uncorrected_volatile"],
            ecc_errors_corrected_aggregate=slow["ecc_errors_corrected_aggregate"],
            ecc_errors_uncorrected_aggregate=slow["ecc_errors_uncorrected_aggregate"],
            saturation=saturation,
            processes=self._processes(gpu) if detail else (),
        )

    @property
    def _temperature(self) -> Callable[[Any, int], int]:
        # nvmlDeviceGetTemperature is deprecated (bindings for CUDA 14 drop it): its successor
        # where the binding no longer has it.
        nv = self.nv
        fn = getattr(nv, "nvmlDeviceGetTemperature", None)
        return fn if fn is not None else nv.nvmlDeviceGetTemperatureV

    def _memory_temperature(self, gpu: _Gpu) -> float | None:
        nv = self.nv
        values = self._field(gpu, "memory_temp", nv.nvmlDeviceGetFieldValues, gpu.handle,
                             [nv.NVML_FI_DEV_MEMORY_TEMP])
        if values is None:
            return None
        v = values[0]
        if v.nvmlReturn != nv.NVML_SUCCESS:
            gpu.skip.add("memory_temp")
            return None
        return v.value.uiVal

    def _event_mask(self, gpu: _Gpu) -> int | None:
        nv = self.nv
        fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
        if fn is None:  # bindings before 12.535 call them "throttle reasons"
            fn = nv.nvmlDeviceGetCurrentClocksThrottleReasons
        return self._field(gpu, "events", fn, gpu.handle)

    def _saturation(self, gpu: _Gpu, mig: bool | None) -> Saturation:
        gpm = gpu.gpm
        if gpm is None:
            return NO_SATURATION
        nv = self.nv
        try:
            return gpm.saturation(self.clock.monotonic, bool(mig))
        except nv.NVMLError as exc:
            if exc.value == self._lost_code:
                raise
            if exc.value in (nv.NVML_ERROR_NOT_SUPPORTED, nv.NVML_ERROR_FUNCTION_NOT_FOUND,
                             nv.NVML_ERROR_ARGUMENT_VERSION_MISMATCH):
                gpm.close()
                gpu.gpm = None
            return NO_SATURATION

    # ------------------------------------------------------------------ processes
    def _running(self, gpu: _Gpu, kind: str) -> list:
        """Compute ("C") or graphics ("G") processes via the newest wrapper that works here:
        _v3, else _v2, else the unsuffixed one (driver 535.98 changed the struct)."""
        nv = self.nv
        chosen = self._proc_fn.get(kind, "")
        if chosen:
            return self._field(gpu, "procs" + kind, getattr(nv, chosen), gpu.handle) or []
        if chosen is None:
            return []
        for name in PROCESS_FUNCTIONS[kind]:
            fn = getattr(nv, name, None)
            if fn is None:
                continue
            try:
                procs = fn(gpu.handle)
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

    def _processes(self, gpu: _Gpu) -> tuple[Process, ...]:
        merged: dict[int, list] = {}
        for kind in ("C", "G"):
            if "procs" + kind in gpu.skip:
                continue
            for p in self._running(gpu, kind):
                used = p.usedGpuMemory
                entry = merged.get(p.pid)
                if entry is None:
                    merged[p.pid] = [used, kind]
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
        for pid, (used, kind) in merged.items():
            facts = facts_by_pid[pid]
            owner = facts.owner
            out.append(Process(
                pid=pid,
                user=facts.user,
                name=facts.name,
                command=facts.command,
                gpu_memory_mib=used / MIB if used is not None else None,
                sm_pct=sm.get(pid),
                cpu_pct=facts.cpu_pct,
                host_memory_mib=facts.host_memory_mib,
                started=facts.started,
                type=kind,
                container=owner.container,
                job=owner.job,
                namespace_pid=owner.namespace_pid,
                outside_pid_namespace=facts.outside_pid_namespace,
            ))
        return tuple(out)

    def _process_sm(self, gpu: _Gpu, pids: dict[int, Any]) -> dict[int, float]:
        """Per-process SM% from the driver's samples newer than the last one seen."""
        nv = self.nv
        cache = gpu.sm
        if "proc_util" not in gpu.skip:
            # NOT_FOUND: no sample since lastSeenTimeStamp, which is not an error
            samples = self._field(gpu, "proc_util", nv.nvmlDeviceGetProcessUtilization,
                                  gpu.handle, gpu.util_seen)
            for s in samples or ():
                ts = s.timeStamp
                old = cache.get(s.pid)
                if old is None or ts >= old[1]:
                    cache[s.pid] = (float(s.smUtil), ts)
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
        code = getattr(exc, "value", None)
        if code == self._lost_code:
            gpu.status, gpu.reason = "lost", "GPU is lost (fallen off the bus)"
        else:
            gpu.status, gpu.reason = "error", f"NVML: {exc}"
        if code == getattr(nv, "NVML_ERROR_UNKNOWN", None):
            gpu.reason = "NVML: Unknown Error"
        gpu.retry_at = self.clock.monotonic() + gpu.backoff
        gpu.backoff = min(RETRY_MAX_S, gpu.backoff * 2)

    def _down(self, gpu: _Gpu) -> Device:
        info = gpu.info
        return Device(index=info.index, uuid=info.uuid, name=info.name, vendor="nvidia",
                      pci_bus_id=info.pci_bus_id, status=gpu.status, status_reason=gpu.reason,
                      memory_total_mib=info.memory_total_mib,
                      power_limit_default_w=info.power_limit_default_w,
                      power_limit_min_w=info.power_limit_min_w,
                      power_limit_max_w=info.power_limit_max_w,
                      clock_sm_max_mhz=info.clock_sm_max_mhz,
                      clock_mem_max_mhz=info.clock_mem_max_mhz)

    def _recover(self, now: float) -> None:
        """Retry failed devices whose backoff has passed, re-initialising NVML once first."""
        due = [g for g in self._gpus if g.status != "ok" and now >= g.retry_at]
        if not due:
            return
        nv = self.nv
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
                        gpu.info, gpu.static = self._static(gpu.info.index, gpu.handle)
                    self._refresh_slow(gpu, now)
                if is_supported(nv, gpu.handle):
                    gpu.gpm = DeviceGpm(nv, gpu.handle, self.clock.sleep)
                    self._prime_gpm(gpu)
            except nv.NVMLError as exc:
                self._mark(gpu, exc)
                continue
            if was_down:
                gpu.status, gpu.reason = "ok", None
                gpu.backoff = RETRY_FIRST_S
                gpu.skip.clear()
                gpu.util_seen = 0

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
            gpu.slow_at = float("-inf")  # read the new enforced limit on the next tick


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
            "NVML: " + INIT_MESSAGES["NVML_ERROR_LIBRARY_NOT_FOUND"]) from None


def init_message(nv: Any, exc: Exception) -> str:
    code = getattr(exc, "value", None)
    for name, text in INIT_MESSAGES.items():
        if code is not None and code == getattr(nv, name, object()):
            return text
    return str(exc)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)


def _watts(milliwatts: int | None) -> float | None:
    return milliwatts / 1000.0 if milliwatts is not None else None
