"""A faithful fake of nvidia-ml-py's ``pynvml`` module, for tests and benchmarks without a GPU.

What is faithful and why:

- Constants, ctypes structs and the ``NVMLError`` class hierarchy are taken from the installed
  nvidia-ml-py itself, so error codes (``.value``), generated subclasses
  (``NVMLError_NotSupported``...) and struct attribute names cannot drift from the real binding.
- Functions keep the real names and signatures and return what the real wrappers return:
  ctypes structs (``c_nvmlMemory_t``/``c_nvmlMemory_v2_t``, ``c_nvmlUtilization_t``,
  ``c_nvmlProcessUtilizationSample_t``, ``c_nvmlFieldValue_t``...), plain ints for scalar getters,
  ``str`` for string getters, ``[current, pending]`` lists for mode getters, and
  ``nvmlFriendlyObject`` lists for running processes (``usedGpuMemory`` None where NVML says
  ``NVML_VALUE_NOT_AVAILABLE``). GPM samples are real ``c_nvmlGpmSample_t`` pointers and
  ``nvmlGpmMetricsGet`` fills a real ``c_nvmlGpmMetricsGet_t``.
- Failures are raised the way the real module raises them: ``NVMLError(code)`` (which maps to the
  generated subclass), ``FunctionNotFound`` for a symbol the driver lacks, ``LibraryNotFound``
  from ``nvmlInit`` when there is no ``libnvidia-ml.so.1``, ``Uninitialized`` before init.

Use: ``nv = FakeNvml([h100(0), a100(1)])``, then hand ``nv`` to the backend as the module (or
``install(monkeypatch, nv)`` to put it in ``sys.modules['pynvml']``). Inject faults with
``nv.fail(fn_name, code, device=None)``, ``nv.lose(index)``, ``nv.remove_function(name)``.
"""

from __future__ import annotations

import ctypes
import math
import threading
import time
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pynvml as _real

from gputop.backends.base import Clock


class ManualClock(Clock):
    """Virtual time that moves only when waited on or advanced: shared by the fake driver, the
    backend, tests and benches, so that no schedule sleeps for real."""

    sleeps = False

    def __init__(self, t: float = 1000.0, epoch: float = 1_763_769_600.0) -> None:
        self.t = t
        self.epoch = epoch

    def monotonic(self) -> float:
        return self.t

    def wall(self) -> float:
        return self.epoch + self.t

    def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        self.sleep(seconds)
        return event.is_set()

    def advance(self, seconds: float) -> None:
        self.t += seconds

MIB = 1024 * 1024

# Everything in the real module that is not a function wrapper: constants, ctypes structs, the
# NVMLError classes. Function wrappers are what this fake replaces.
_EXPORTED = {
    name: value
    for name, value in vars(_real).items()
    if not name.startswith("__") and not isinstance(value, (types.FunctionType, types.ModuleType))
}
_EXPORTED.pop("nvmlLib", None)

NVMLError = _real.NVMLError
NVMLLibraryMismatchError = _real.NVMLLibraryMismatchError


@dataclass
class FakeProcess:
    pid: int
    used_mib: float | None = 1024.0  # None: NVML_VALUE_NOT_AVAILABLE
    kind: str = "C"  # "C" compute, "G" graphics, "C+G" both
    sm_util: int | None = 50  # None: no utilization sample for this pid
    mem_util: int = 10
    gpu_instance_id: int = 0xFFFFFFFF
    compute_instance_id: int = 0xFFFFFFFF


@dataclass
class FakeMigDevice:
    """One MIG device: a compute instance spanning its GPU instance (``-cgi … -C``)."""

    gi: int  # GPU instance id
    sms: int
    profile: str = "1g.10gb"
    ci: int = 0  # compute instance id
    memory_total_mib: float = 9984.0
    memory_used_mib: float = 9.0  # what an instance without processes holds
    uuid: str = ""  # "" : made from the GPU's UUID and the GI id


@dataclass
class FakeGpu:
    """One GPU's state. Units as NVML reports them (bytes, mW, mJ, MHz)."""

    index: int
    name: str
    uuid: str
    serial: str
    pci_bus_id: str
    vbios: str
    memory_total: int
    memory_reserved: int
    memory_used: int
    util_gpu: int = 97
    util_mem: int = 41
    temperature: int = 61
    memory_temperature: int | None = 70  # None: field not supported (NVML_FI_DEV_MEMORY_TEMP)
    fan: int | None = None  # None: no fan of its own (SXM) -> NotSupported
    power_mw: int = 512_300
    power_limit_mw: int = 700_000
    power_default_mw: int = 700_000
    power_min_mw: int = 200_000
    power_max_mw: int = 700_000
    energy_mj: int = 123_456_789
    clock_sm: int = 1980
    clock_mem: int = 2619
    clock_sm_max: int = 1980
    clock_mem_max: int = 2619
    pstate: int = 0
    event_mask: int = 0
    pcie_gen: int = 5
    pcie_width: int = 16
    pcie_gen_max: int = 5
    pcie_width_max: int = 16
    ecc: int = 1
    persistence: int = 1
    display_active: int = 0  # a headless server GPU
    mig: int = 0
    minor: int | None = None  # /dev/nvidiaN; None: the index, as on most machines
    compute_mode: int = 0
    # None: the same as the current mode (a change waits for the next GPU reset)
    ecc_pending: int | None = None
    mig_pending: int | None = None
    # (NVML_MEMORY_ERROR_TYPE_*, NVML_VOLATILE_ECC/NVML_AGGREGATE_ECC) -> count; missing: 0
    ecc_errors: dict[tuple[int, int], int] = field(default_factory=dict)
    pci_device_id: int = 0x233010DE  # device id << 16 | vendor id (0x10DE: NVIDIA)
    pci_sub_system_id: int = 0x16C110DE
    compute_capability: tuple[int, int] = (9, 0)
    util_encoder: int | None = 0  # None: no NVENC -> NotSupported
    util_decoder: int | None = 0  # None: no NVDEC -> NotSupported
    clock_video: int | None = 1545  # None: NotSupported
    supported_event_mask: int = 0x1FF
    pcie_replay: int | None = 0  # None: NotSupported
    # (correctable, uncorrectable, pending, failure occurred); None: NotSupported (pre-Ampere)
    remapped_rows: tuple[int, int, int, int] | None = (0, 0, 0, 0)
    # Retired pages per cause (NVML_PAGE_RETIREMENT_CAUSE_*) and whether one is pending;
    # None: NotSupported (Ampere and later remap rows instead)
    retired_pages: dict[int, int] | None = None
    retired_pending: int = 0
    # NVML_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL field id -> value; None: no NVLink (NotSupported)
    nvlink_errors: dict[int, int] | None = None
    # nvmlDeviceGetPcieThroughput's (TX, RX) in KB/s; None: NotSupported
    pcie_throughput: tuple[int, int] | None = (102_400, 307_200)
    # per NVLink link, its cumulative (TX, RX) data counters in KiB (NVML_FI_DEV_NVLINK_THROUGHPUT_
    # DATA_TX/RX, scope id = link); empty: no NVLink (the link count field is NotSupported)
    nvlink_kib: list[tuple[int, int]] = field(default_factory=list)
    # NVML_TEMPERATURE_THRESHOLD_* -> °C (an H100 SXM's); a missing one is NotSupported
    temperature_thresholds: dict[int, int] = field(
        default_factory=lambda: {0: 92, 1: 89, 2: 95, 3: 87})
    gpm: bool = True
    # metric id -> value (float, NaN allowed) or an NVML error code int wrapped as ("err", code)
    gpm_metrics: dict[int, float | tuple[str, int]] = field(default_factory=dict)
    mig_gpm_metrics: dict[int, dict[int, float]] = field(default_factory=dict)  # GI id -> metrics
    mig_instances: list[FakeMigDevice] = field(default_factory=list)  # while ``mig`` is 1
    processes: list[FakeProcess] = field(default_factory=list)
    xid_events: bool = True  # False: nvmlDeviceRegisterEvents says NOT_SUPPORTED (Xid events)


def _uuid(i: int, salt: str) -> str:
    h = f"{abs(hash((salt, i))) % (1 << 64):016x}{(i * 2654435761) % (1 << 32):08x}ab12cd34"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def default_gpm_metrics(sm: float = 83.0) -> dict[int, float]:
    r = _real
    return {
        r.NVML_GPM_METRIC_GRAPHICS_UTIL: 97.0,
        r.NVML_GPM_METRIC_SM_UTIL: sm,
        r.NVML_GPM_METRIC_SM_OCCUPANCY: 40.1,
        r.NVML_GPM_METRIC_ANY_TENSOR_UTIL: 55.0,
        r.NVML_GPM_METRIC_HMMA_TENSOR_UTIL: 52.5,
        r.NVML_GPM_METRIC_IMMA_TENSOR_UTIL: 0.0,
        r.NVML_GPM_METRIC_DFMA_TENSOR_UTIL: 0.0,
        r.NVML_GPM_METRIC_DRAM_BW_UTIL: 31.0,
        r.NVML_GPM_METRIC_FP16_UTIL: 4.5,
        r.NVML_GPM_METRIC_FP32_UTIL: 12.25,
        r.NVML_GPM_METRIC_FP64_UTIL: 0.5,
        r.NVML_GPM_METRIC_PCIE_TX_PER_SEC: 1234.5,
        r.NVML_GPM_METRIC_PCIE_RX_PER_SEC: 2345.5,
        r.NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC: 98765.0,
        r.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC: 87654.0,
    }


def h100(index: int, processes: Iterable[FakeProcess] = ()) -> FakeGpu:
    """An H100 SXM5 80GB as NVML reports it (Hopper: GPM supported)."""
    return FakeGpu(
        index=index,
        name="NVIDIA H100 80GB HBM3",
        uuid=_uuid(index, "h100"),
        serial=f"165222{index:07d}",
        pci_bus_id=f"00000000:{0x18 + 0x10 * index:02X}:00.0",
        vbios="96.00.74.00.01",
        memory_total=81559 * MIB,
        memory_reserved=479 * MIB,
        memory_used=40211 * MIB,
        gpm=True,
        gpm_metrics=default_gpm_metrics(),
        processes=list(processes),
    )


def a100(index: int, processes: Iterable[FakeProcess] = ()) -> FakeGpu:
    """An A100 SXM4 80GB (Ampere: no GPM)."""
    return FakeGpu(
        index=index,
        name="NVIDIA A100-SXM4-80GB",
        uuid=_uuid(index, "a100"),
        serial=f"132432{index:07d}",
        pci_bus_id=f"00000000:{0x07 + 0x10 * index:02X}:00.0",
        vbios="92.00.45.00.06",
        memory_total=81920 * MIB,
        memory_reserved=566 * MIB,
        memory_used=30000 * MIB,
        util_gpu=88,
        util_mem=35,
        temperature=55,
        memory_temperature=63,
        power_mw=301_250,
        power_limit_mw=400_000,
        power_default_mw=400_000,
        power_min_mw=100_000,
        power_max_mw=400_000,
        energy_mj=98_765_432,
        clock_sm=1410,
        clock_mem=1593,
        clock_sm_max=1410,
        clock_mem_max=1593,
        pcie_gen=4,
        pcie_gen_max=4,
        pci_device_id=0x20B210DE,
        pci_sub_system_id=0x147F10DE,
        compute_capability=(8, 0),
        clock_video=1275,
        gpm=False,
        processes=list(processes),
    )


def mig_h100(index: int) -> FakeGpu:
    """An H100 with MIG on, as the real 590.48.01 capture shows it
    (tests/fixtures/mig/table_1xH100-MIG_590.48.01_load.txt): 3g.40gb + 2g.20gb + 2x 1g.10gb,
    three processes in the 3g.40gb instance (GI 2)."""
    gpu = h100(index, [FakeProcess(21180, 2296.0, gpu_instance_id=2, compute_instance_id=0),
                       FakeProcess(21181, 1272.0, gpu_instance_id=2, compute_instance_id=0),
                       FakeProcess(21198, 7484.0, gpu_instance_id=2, compute_instance_id=0)])
    gpu.mig = 1
    gpu.memory_used = 11125 * MIB
    gpu.mig_instances = [FakeMigDevice(2, 60, "3g.40gb", memory_total_mib=40448,
                                       memory_used_mib=11091),
                         FakeMigDevice(3, 32, "2g.20gb", memory_total_mib=20096,
                                       memory_used_mib=17),
                         FakeMigDevice(9, 16, "1g.10gb"),
                         FakeMigDevice(10, 16, "1g.10gb")]
    gpu.mig_gpm_metrics = {2: default_gpm_metrics(91.0), 3: default_gpm_metrics(0.0),
                           9: default_gpm_metrics(0.0), 10: default_gpm_metrics(0.0)}
    return gpu


def node(count: int, procs_per_gpu: int = 0, pid_base: int = 9_000_000,
         pids: list[int] | None = None) -> list[FakeGpu]:
    """``count`` H100s, each with ``procs_per_gpu`` compute processes (pids from ``pids`` or
    numbered from ``pid_base``, above any pid_max: no such host process)."""
    gpus = []
    k = 0
    for i in range(count):
        procs = []
        for _ in range(procs_per_gpu):
            pid = pids[k] if pids is not None else pid_base + k
            procs.append(FakeProcess(pid=pid, used_mib=10000.0, sm_util=90 // procs_per_gpu))
            k += 1
        gpus.append(h100(i, procs))
    return gpus


class FakeHandle:
    """Stands for a ``c_nvmlDevice_t``: opaque to the caller."""

    __slots__ = ("index", "mig_of", "gi_id", "mig_index")

    def __init__(self, index: int, mig_of: int | None = None, gi_id: int | None = None,
                 mig_index: int | None = None) -> None:
        self.index = index
        self.mig_of = mig_of  # a MIG device handle: its parent GPU's index
        self.gi_id = gi_id
        self.mig_index = mig_index

    def __repr__(self) -> str:
        return f"<c_nvmlDevice_t fake {self.index}>"

    # Two handles of one device are equal, as two c_nvmlDevice_t pointers to it hold one address
    # (an event brings its own handle object).
    def _key(self) -> tuple:
        return (self.index, self.mig_of, self.gi_id, self.mig_index)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeHandle) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


@dataclass
class FakeEventData:
    """c_nvmlEventData_t's fields; ``device`` is the fake's handle, which ctypes cannot hold."""

    device: FakeHandle
    eventType: int  # noqa: N815 - the struct's names
    eventData: int  # noqa: N815
    gpuInstanceId: int = 0xFFFFFFFF  # noqa: N815
    computeInstanceId: int = 0xFFFFFFFF  # noqa: N815


class FakeEventSet:
    """Stands for a ``c_nvmlEventSet_t``: the devices registered (index -> event mask) and the
    events waiting, oldest first."""

    def __init__(self) -> None:
        self.masks: dict[int, int] = {}
        self.waiting: list[FakeEventData] = []
        self.freed = False


class _GpmSampleState:
    __slots__ = ("device", "gi", "time")

    def __init__(self) -> None:
        self.device: int | None = None
        self.gi: int | None = None
        self.time: float | None = None


class FakeNvml:
    """Looks like the ``pynvml`` module to code that calls it."""

    def __init__(
        self,
        gpus: list[FakeGpu] | None = None,
        *,
        driver: str = "580.95.05",
        cuda: int = 13000,
        library: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.__dict__.update(_EXPORTED)
        self.gpus: list[FakeGpu] = list(gpus or [])
        self.driver = driver
        self.cuda = cuda
        self.library = library
        self.clock = clock
        self.initialized = 0
        self.init_error: int | None = None
        self.faults: dict[tuple[str, int | None], int] = {}
        self.lost: set[int] = set()
        self.missing: set[str] = set()
        self.calls: dict[str, int] = {}
        self.gpm_intervals: dict[tuple[int, int | None], float] = {}
        self._gpm_samples: dict[int, _GpmSampleState] = {}
        self._gpm_buffers: list[ctypes.Array] = []
        self.event_sets: list[FakeEventSet] = []

    # ---------------------------------------------------------------- fault injection
    def fail(self, fn: str, code: int, device: int | None = None) -> None:
        """Make ``fn`` raise NVMLError(code) (for one device, or all)."""
        self.faults[(fn, device)] = code

    def heal(self, fn: str, device: int | None = None) -> None:
        self.faults.pop((fn, device), None)

    def lose(self, index: int) -> None:
        """The GPU falls off the bus: every call on it raises GPU_IS_LOST."""
        self.lost.add(index)

    def recover(self, index: int) -> None:
        self.lost.discard(index)

    def remove_function(self, *names: str) -> None:
        """The driver lacks these symbols (an old driver): calls raise FunctionNotFound."""
        self.missing.update(names)

    def hide_binding(self, *names: str) -> None:
        """An older nvidia-ml-py that lacks these wrappers: the attribute does not exist."""
        self.__class__ = _HidingFakeNvml
        self.__dict__.setdefault("hidden", set()).update(names)

    def xid(self, index: int, code: int) -> None:
        """GPU ``index`` reports critical Xid ``code``: an event in every set registered for it."""
        for events in self.event_sets:
            if not events.freed and events.masks.get(index, 0) & _real.nvmlEventTypeXidCriticalError:
                events.waiting.append(FakeEventData(FakeHandle(index),
                                                    _real.nvmlEventTypeXidCriticalError, code))

    def count(self, fn: str) -> int:
        return self.calls.get(fn, 0)

    # ---------------------------------------------------------------- plumbing
    def _enter(self, fn: str) -> None:
        calls = self.calls
        calls[fn] = calls.get(fn, 0) + 1
        if not self.initialized:
            raise NVMLError(_real.NVML_ERROR_UNINITIALIZED)
        if fn in self.missing:
            raise NVMLError(_real.NVML_ERROR_FUNCTION_NOT_FOUND)
        if self.faults:
            code = self.faults.get((fn, None))
            if code is not None:
                raise NVMLError(code)

    def _dev(self, fn: str, handle: FakeHandle) -> FakeGpu:
        self._enter(fn)
        index = handle.mig_of if handle.mig_of is not None else handle.index
        if self.faults:
            code = self.faults.get((fn, index))
            if code is not None:
                raise NVMLError(code)
        if index in self.lost:
            raise NVMLError(_real.NVML_ERROR_GPU_IS_LOST)
        return self.gpus[index]

    def _mig_dev(self, gpu: FakeGpu, handle: FakeHandle) -> FakeMigDevice | None:
        """The MIG device a handle stands for (None: the parent GPU's own handle)."""
        if handle.mig_index is None:
            return None
        if not gpu.mig or handle.mig_index >= len(gpu.mig_instances):
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)  # torn down since
        return gpu.mig_instances[handle.mig_index]

    def _no_mig(self, gpu: FakeGpu) -> None:
        """NVML: "On MIG-enabled GPUs, querying the utilization of encoder, decoder, jpeg, ofa,
        gpu, and memory is not currently supported" (--help-query-gpu of 590.48.01), nor is
        per-process utilization; the real MIG capture shows the row remapper [N/A] too."""
        if gpu.mig:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)

    # ---------------------------------------------------------------- init / system
    def nvmlInit(self) -> None:
        self.nvmlInitWithFlags(0)

    def nvmlInitWithFlags(self, flags: int) -> None:
        self.calls["nvmlInit"] = self.calls.get("nvmlInit", 0) + 1
        if not self.library:
            raise NVMLError(_real.NVML_ERROR_LIBRARY_NOT_FOUND)
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialized += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self.initialized = max(0, self.initialized - 1)

    def nvmlErrorString(self, result: int) -> str:
        return NVMLError._errcode_to_string.get(result, "Unknown Error")

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion")
        return self.cuda

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion_v2")
        return self.cuda

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._enter("nvmlSystemGetNVMLVersion")
        return "13." + self.driver

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        self._enter("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self.gpus):
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        if index in self.lost:
            raise NVMLError(_real.NVML_ERROR_GPU_IS_LOST)
        return FakeHandle(index)

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> FakeHandle:
        self._enter("nvmlDeviceGetHandleByUUID")
        for gpu in self.gpus:
            if gpu.uuid == uuid:
                if gpu.index in self.lost:
                    raise NVMLError(_real.NVML_ERROR_GPU_IS_LOST)
                return FakeHandle(gpu.index)
        raise NVMLError(_real.NVML_ERROR_NOT_FOUND)

    # ---------------------------------------------------------------- identity
    def nvmlDeviceGetIndex(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetIndex", handle).index

    def nvmlDeviceGetName(self, handle: FakeHandle) -> str:
        gpu = self._dev("nvmlDeviceGetName", handle)
        dev = self._mig_dev(gpu, handle)
        return gpu.name if dev is None else f"{gpu.name} MIG {dev.profile}"

    def nvmlDeviceGetUUID(self, handle: FakeHandle) -> str:
        gpu = self._dev("nvmlDeviceGetUUID", handle)
        dev = self._mig_dev(gpu, handle)
        if dev is None:
            return gpu.uuid
        return dev.uuid or "MIG-" + _uuid(gpu.index * 100 + dev.gi, "mig")[4:]

    def nvmlDeviceGetSerial(self, handle: FakeHandle) -> str:
        return self._dev("nvmlDeviceGetSerial", handle).serial

    def nvmlDeviceGetVbiosVersion(self, handle: FakeHandle) -> str:
        return self._dev("nvmlDeviceGetVbiosVersion", handle).vbios

    def nvmlDeviceGetMinorNumber(self, handle: FakeHandle) -> int:
        gpu = self._dev("nvmlDeviceGetMinorNumber", handle)
        return gpu.index if gpu.minor is None else gpu.minor

    def nvmlDeviceGetPciInfo(self, handle: FakeHandle):
        gpu = self._dev("nvmlDeviceGetPciInfo", handle)
        info = _real.nvmlPciInfo_t()
        domain, bus, rest = gpu.pci_bus_id.split(":")
        info.busId = gpu.pci_bus_id.encode()
        info.busIdLegacy = gpu.pci_bus_id[4:].encode()
        info.domain = int(domain, 16)
        info.bus = int(bus, 16)
        info.device = int(rest.split(".")[0], 16)
        info.pciDeviceId = gpu.pci_device_id
        info.pciSubSystemId = gpu.pci_sub_system_id
        return info

    def nvmlDeviceGetPciInfo_v3(self, handle: FakeHandle):
        return self.nvmlDeviceGetPciInfo(handle)

    def nvmlDeviceGetCudaComputeCapability(self, handle: FakeHandle) -> tuple[int, int]:
        return self._dev("nvmlDeviceGetCudaComputeCapability", handle).compute_capability

    # ---------------------------------------------------------------- memory / utilization
    def nvmlDeviceGetMemoryInfo(self, handle: FakeHandle, version: int | None = None):
        gpu = self._dev("nvmlDeviceGetMemoryInfo" if not version else "nvmlDeviceGetMemoryInfo_v2",
                        handle)
        dev = self._mig_dev(gpu, handle)
        if dev is not None:  # a MIG device reserves nothing of its own (nvidia-smi -q: 0 MiB)
            mem = _real.c_nvmlMemory_t() if not version else _real.c_nvmlMemory_v2_t()
            mem.total = int(dev.memory_total_mib * MIB)
            mem.used = int(dev.memory_used_mib * MIB)
            mem.free = mem.total - mem.used
            return mem
        if not version:
            mem = _real.c_nvmlMemory_t()
            # v1 counts the driver's reservation as used
            mem.total = gpu.memory_total
            mem.used = gpu.memory_used + gpu.memory_reserved
            mem.free = gpu.memory_total - mem.used
            return mem
        if version != _real.nvmlMemory_v2:
            raise NVMLError(_real.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        mem2 = _real.c_nvmlMemory_v2_t()
        mem2.version = version
        mem2.total = gpu.memory_total
        mem2.reserved = gpu.memory_reserved
        mem2.used = gpu.memory_used
        mem2.free = gpu.memory_total - gpu.memory_reserved - gpu.memory_used
        return mem2

    def nvmlDeviceGetUtilizationRates(self, handle: FakeHandle):
        gpu = self._dev("nvmlDeviceGetUtilizationRates", handle)
        self._no_mig(gpu)
        util = _real.c_nvmlUtilization_t()
        util.gpu = gpu.util_gpu
        util.memory = gpu.util_mem
        return util

    def nvmlDeviceGetEncoderUtilization(self, handle: FakeHandle) -> list[int]:
        """``[utilization %, sampling period µs]``, as the real wrapper returns."""
        gpu = self._dev("nvmlDeviceGetEncoderUtilization", handle)
        self._no_mig(gpu)
        if gpu.util_encoder is None:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        return [gpu.util_encoder, 167_000]

    def nvmlDeviceGetDecoderUtilization(self, handle: FakeHandle) -> list[int]:
        gpu = self._dev("nvmlDeviceGetDecoderUtilization", handle)
        self._no_mig(gpu)
        if gpu.util_decoder is None:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        return [gpu.util_decoder, 167_000]

    # ---------------------------------------------------------------- thermal / power
    def nvmlDeviceGetTemperature(self, handle: FakeHandle, sensor: int) -> int:
        gpu = self._dev("nvmlDeviceGetTemperature", handle)
        if sensor != _real.NVML_TEMPERATURE_GPU:
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        return gpu.temperature

    def nvmlDeviceGetTemperatureV(self, handle: FakeHandle, sensor: int,
                                  version: int = _real.nvmlTemperature_v1) -> int:
        gpu = self._dev("nvmlDeviceGetTemperatureV", handle)
        if version != _real.nvmlTemperature_v1:
            raise NVMLError(_real.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        if sensor != _real.NVML_TEMPERATURE_GPU:
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        return gpu.temperature

    def nvmlDeviceGetFieldValues(self, handle: FakeHandle, fieldIds: list):
        gpu = self._dev("nvmlDeviceGetFieldValues", handle)
        values = (_real.c_nvmlFieldValue_t * len(fieldIds))()
        now_us = int(self.clock() * 1e6)
        for i, fid in enumerate(fieldIds):
            fid, scope = fid if isinstance(fid, tuple) else (fid, 0)
            v = values[i]
            v.fieldId = fid
            v.scopeId = scope
            v.timestamp = now_us
            if fid == _real.NVML_FI_DEV_MEMORY_TEMP and gpu.memory_temperature is not None:
                v.valueType = _real.NVML_VALUE_TYPE_UNSIGNED_INT
                v.nvmlReturn = _real.NVML_SUCCESS
                v.value.uiVal = gpu.memory_temperature
            elif gpu.nvlink_errors is not None and fid in gpu.nvlink_errors:
                v.valueType = _real.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                v.nvmlReturn = _real.NVML_SUCCESS
                v.value.ullVal = gpu.nvlink_errors[fid]
            elif fid == _real.NVML_FI_DEV_NVLINK_LINK_COUNT and gpu.nvlink_kib:
                v.valueType = _real.NVML_VALUE_TYPE_UNSIGNED_INT
                v.nvmlReturn = _real.NVML_SUCCESS
                v.value.uiVal = len(gpu.nvlink_kib)
            elif fid in (_real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
                         _real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX) and scope < len(gpu.nvlink_kib):
                v.valueType = _real.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                v.nvmlReturn = _real.NVML_SUCCESS
                v.value.ullVal = gpu.nvlink_kib[scope][
                    fid == _real.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX]
            elif fid == _real.NVML_FI_DEV_ENERGY:
                v.valueType = _real.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                v.nvmlReturn = _real.NVML_SUCCESS
                v.value.ullVal = gpu.energy_mj
            else:
                v.nvmlReturn = _real.NVML_ERROR_NOT_SUPPORTED
        return values

    def nvmlDeviceGetPcieThroughput(self, device: FakeHandle, counter: int) -> int:
        gpu = self._dev("nvmlDeviceGetPcieThroughput", device)
        if gpu.pcie_throughput is None:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        if counter not in (_real.NVML_PCIE_UTIL_TX_BYTES, _real.NVML_PCIE_UTIL_RX_BYTES):
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        return gpu.pcie_throughput[counter == _real.NVML_PCIE_UTIL_RX_BYTES]

    def nvmlDeviceGetFanSpeed(self, handle: FakeHandle) -> int:
        gpu = self._dev("nvmlDeviceGetFanSpeed", handle)
        if gpu.fan is None:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        return gpu.fan

    def nvmlDeviceGetPcieReplayCounter(self, handle: FakeHandle) -> int:
        gpu = self._dev("nvmlDeviceGetPcieReplayCounter", handle)
        if gpu.pcie_replay is None:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        return gpu.pcie_replay

    def nvmlDeviceGetRemappedRows(self, device: FakeHandle) -> tuple[int, int, int, int]:
        gpu = self._dev("nvmlDeviceGetRemappedRows", device)
        self._no_mig(gpu)
        if gpu.remapped_rows is None:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        return gpu.remapped_rows

    def nvmlDeviceGetRetiredPages(self, device: FakeHandle, sourceFilter: int) -> list[int]:
        gpu = self._dev("nvmlDeviceGetRetiredPages", device)
        if gpu.retired_pages is None:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        return [0x1000 * (n + 1) for n in range(gpu.retired_pages.get(sourceFilter, 0))]

    def nvmlDeviceGetRetiredPagesPendingStatus(self, device: FakeHandle) -> int:
        gpu = self._dev("nvmlDeviceGetRetiredPagesPendingStatus", device)
        if gpu.retired_pages is None:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        return gpu.retired_pending

    def nvmlDeviceGetTemperatureThreshold(self, handle: FakeHandle, threshold: int) -> int:
        gpu = self._dev("nvmlDeviceGetTemperatureThreshold", handle)
        if threshold not in gpu.temperature_thresholds:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        return gpu.temperature_thresholds[threshold]

    def nvmlDeviceGetPowerUsage(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetPowerUsage", handle).power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetEnforcedPowerLimit", handle).power_limit_mw

    def nvmlDeviceGetPowerManagementLimit(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetPowerManagementLimit", handle).power_limit_mw

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetPowerManagementDefaultLimit", handle).power_default_mw

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: FakeHandle) -> list[int]:
        gpu = self._dev("nvmlDeviceGetPowerManagementLimitConstraints", handle)
        return [gpu.power_min_mw, gpu.power_max_mw]

    def nvmlDeviceSetPowerManagementLimit(self, handle: FakeHandle, limit: int) -> None:
        gpu = self._dev("nvmlDeviceSetPowerManagementLimit", handle)
        if not gpu.power_min_mw <= limit <= gpu.power_max_mw:
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        gpu.power_limit_mw = int(limit)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetTotalEnergyConsumption", handle).energy_mj

    # ---------------------------------------------------------------- clocks / state
    def nvmlDeviceGetClockInfo(self, handle: FakeHandle, type: int) -> int:
        gpu = self._dev("nvmlDeviceGetClockInfo", handle)
        if type in (_real.NVML_CLOCK_SM, _real.NVML_CLOCK_GRAPHICS):
            return gpu.clock_sm
        if type == _real.NVML_CLOCK_MEM:
            return gpu.clock_mem
        if type == _real.NVML_CLOCK_VIDEO and gpu.clock_video is not None:
            return gpu.clock_video
        raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetMaxClockInfo(self, handle: FakeHandle, type: int) -> int:
        gpu = self._dev("nvmlDeviceGetMaxClockInfo", handle)
        if type in (_real.NVML_CLOCK_SM, _real.NVML_CLOCK_GRAPHICS):
            return gpu.clock_sm_max
        if type == _real.NVML_CLOCK_MEM:
            return gpu.clock_mem_max
        raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetPerformanceState(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetPerformanceState", handle).pstate

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetCurrentClocksEventReasons", handle).event_mask

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetCurrentClocksThrottleReasons", handle).event_mask

    def nvmlDeviceGetSupportedClocksEventReasons(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetSupportedClocksEventReasons", handle).supported_event_mask

    def nvmlDeviceGetSupportedClocksThrottleReasons(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetSupportedClocksThrottleReasons",
                         handle).supported_event_mask

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetCurrPcieLinkGeneration", handle).pcie_gen

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetCurrPcieLinkWidth", handle).pcie_width

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetMaxPcieLinkGeneration", handle).pcie_gen_max

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetMaxPcieLinkWidth", handle).pcie_width_max

    def nvmlDeviceGetEccMode(self, handle: FakeHandle) -> list[int]:
        gpu = self._dev("nvmlDeviceGetEccMode", handle)
        return [gpu.ecc, gpu.ecc if gpu.ecc_pending is None else gpu.ecc_pending]

    def nvmlDeviceGetTotalEccErrors(self, handle: FakeHandle, errorType: int,
                                    counterType: int) -> int:
        gpu = self._dev("nvmlDeviceGetTotalEccErrors", handle)
        if errorType not in (_real.NVML_MEMORY_ERROR_TYPE_CORRECTED,
                             _real.NVML_MEMORY_ERROR_TYPE_UNCORRECTED) or \
                counterType not in (_real.NVML_VOLATILE_ECC, _real.NVML_AGGREGATE_ECC):
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        if not gpu.ecc:  # NVML: "Requires ECC Mode to be enabled"
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        return gpu.ecc_errors.get((errorType, counterType), 0)

    def nvmlDeviceGetPersistenceMode(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetPersistenceMode", handle).persistence

    def nvmlDeviceGetDisplayActive(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetDisplayActive", handle).display_active

    def nvmlDeviceGetMigMode(self, device: FakeHandle) -> list[int]:
        gpu = self._dev("nvmlDeviceGetMigMode", device)
        return [gpu.mig, gpu.mig if gpu.mig_pending is None else gpu.mig_pending]

    def nvmlDeviceGetComputeMode(self, handle: FakeHandle) -> int:
        return self._dev("nvmlDeviceGetComputeMode", handle).compute_mode

    # ---------------------------------------------------------------- MIG
    def nvmlDeviceGetMaxMigDeviceCount(self, device: FakeHandle) -> int:
        gpu = self._dev("nvmlDeviceGetMaxMigDeviceCount", device)
        return 7 if gpu.mig else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, device: FakeHandle, index: int) -> FakeHandle:
        gpu = self._dev("nvmlDeviceGetMigDeviceHandleByIndex", device)
        if not gpu.mig or index >= len(gpu.mig_instances):
            raise NVMLError(_real.NVML_ERROR_NOT_FOUND)
        return FakeHandle(1000 + index, mig_of=gpu.index, gi_id=gpu.mig_instances[index].gi,
                          mig_index=index)

    def nvmlDeviceGetGpuInstanceId(self, device: FakeHandle) -> int:
        gpu = self._dev("nvmlDeviceGetGpuInstanceId", device)
        dev = self._mig_dev(gpu, device)
        if dev is None:
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        return dev.gi

    def nvmlDeviceGetComputeInstanceId(self, device: FakeHandle) -> int:
        gpu = self._dev("nvmlDeviceGetComputeInstanceId", device)
        dev = self._mig_dev(gpu, device)
        if dev is None:
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        return dev.ci

    def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, migDevice: FakeHandle) -> FakeHandle:
        gpu = self._dev("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", migDevice)
        if self._mig_dev(gpu, migDevice) is None:
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        return FakeHandle(gpu.index)

    def nvmlDeviceGetAttributes(self, device: FakeHandle):
        gpu = self._dev("nvmlDeviceGetAttributes", device)
        dev = self._mig_dev(gpu, device)
        attrs = _real.c_nvmlDeviceAttributes()
        attrs.multiprocessorCount = 132 if dev is None else dev.sms
        return attrs

    # ---------------------------------------------------------------- processes
    def _procs(self, fn: str, handle: FakeHandle, kind: str, fields: tuple[str, ...]) -> list:
        gpu = self._dev(fn, handle)
        dev = self._mig_dev(gpu, handle)
        out = []
        for p in gpu.processes:
            if kind not in p.kind:
                continue
            if dev is not None and (p.gpu_instance_id, p.compute_instance_id) != (dev.gi, dev.ci):
                continue  # a MIG device lists its own instance's processes
            used = _real.NVML_VALUE_NOT_AVAILABLE_ulonglong.value if p.used_mib is None \
                else int(p.used_mib * MIB)
            values = {"pid": p.pid, "usedGpuMemory": used,
                      "gpuInstanceId": p.gpu_instance_id,
                      "computeInstanceId": p.compute_instance_id}
            obj = _real.nvmlFriendlyObject({k: values[k] for k in fields})
            if obj.usedGpuMemory == _real.NVML_VALUE_NOT_AVAILABLE_ulonglong.value:
                obj.usedGpuMemory = None  # as the real wrapper does
            out.append(obj)
        return out

    _V2 = ("pid", "usedGpuMemory", "gpuInstanceId", "computeInstanceId")
    _V1 = ("pid", "usedGpuMemory")

    def nvmlDeviceGetComputeRunningProcesses_v3(self, handle: FakeHandle) -> list:
        return self._procs("nvmlDeviceGetComputeRunningProcesses_v3", handle, "C", self._V2)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: FakeHandle) -> list:
        return self._procs("nvmlDeviceGetComputeRunningProcesses_v2", handle, "C", self._V2)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeHandle) -> list:
        return self._procs("nvmlDeviceGetComputeRunningProcesses", handle, "C", self._V1)

    def nvmlDeviceGetGraphicsRunningProcesses_v3(self, handle: FakeHandle) -> list:
        return self._procs("nvmlDeviceGetGraphicsRunningProcesses_v3", handle, "G", self._V2)

    def nvmlDeviceGetGraphicsRunningProcesses_v2(self, handle: FakeHandle) -> list:
        return self._procs("nvmlDeviceGetGraphicsRunningProcesses_v2", handle, "G", self._V2)

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: FakeHandle) -> list:
        return self._procs("nvmlDeviceGetGraphicsRunningProcesses", handle, "G", self._V1)

    def nvmlDeviceGetProcessUtilization(self, handle: FakeHandle, timeStamp: int) -> list:
        """Samples newer than ``timeStamp`` (µs); NVML samples about every 1/6 s.
        NOT_FOUND when there is none, as the driver answers."""
        gpu = self._dev("nvmlDeviceGetProcessUtilization", handle)
        self._no_mig(gpu)
        now_us = int(self.clock() * 1e6)
        stamp = now_us - now_us % 166_667
        samples = []
        if stamp > timeStamp:
            for p in gpu.processes:
                if p.sm_util is None:
                    continue
                s = _real.c_nvmlProcessUtilizationSample_t()
                s.pid = p.pid
                s.timeStamp = stamp
                s.smUtil = p.sm_util
                s.memUtil = p.mem_util
                s.encUtil = 0
                s.decUtil = 0
                samples.append(s)
        if not samples:
            raise NVMLError(_real.NVML_ERROR_NOT_FOUND)
        return samples

    # ---------------------------------------------------------------- events
    def nvmlEventSetCreate(self) -> FakeEventSet:
        self._enter("nvmlEventSetCreate")
        events = FakeEventSet()
        self.event_sets.append(events)
        return events

    def nvmlDeviceRegisterEvents(self, handle: FakeHandle, eventTypes: int,
                                 eventSet: FakeEventSet) -> None:
        gpu = self._dev("nvmlDeviceRegisterEvents", handle)
        if eventSet.freed:
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        if eventTypes & _real.nvmlEventTypeXidCriticalError and not gpu.xid_events:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        eventSet.masks[gpu.index] = eventSet.masks.get(gpu.index, 0) | eventTypes

    def nvmlEventSetWait_v2(self, eventSet: FakeEventSet, timeoutms: int) -> FakeEventData:
        self._enter("nvmlEventSetWait_v2")
        if eventSet.freed:
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        if not eventSet.waiting:
            raise NVMLError(_real.NVML_ERROR_TIMEOUT)  # the fake never waits: no event came
        return eventSet.waiting.pop(0)

    def nvmlEventSetWait(self, eventSet: FakeEventSet, timeoutms: int) -> FakeEventData:
        return self.nvmlEventSetWait_v2(eventSet, timeoutms)

    def nvmlEventSetFree(self, eventSet: FakeEventSet) -> None:
        self._enter("nvmlEventSetFree")
        if eventSet.freed:
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        eventSet.freed = True

    # ---------------------------------------------------------------- GPM
    def nvmlGpmQueryDeviceSupport(self, device: FakeHandle):
        gpu = self._dev("nvmlGpmQueryDeviceSupport", device)
        support = _real.c_nvmlGpmSupport_t()
        support.version = _real.NVML_GPM_SUPPORT_VERSION
        support.isSupportedDevice = 1 if gpu.gpm else 0
        return support

    def nvmlGpmSampleAlloc(self):
        self._enter("nvmlGpmSampleAlloc")
        buf = (ctypes.c_char * 16)()
        self._gpm_buffers.append(buf)
        sample = ctypes.cast(buf, _real.c_nvmlGpmSample_t)
        self._gpm_samples[ctypes.addressof(buf)] = _GpmSampleState()
        return sample

    def nvmlGpmSampleFree(self, gpmSample) -> None:
        self._enter("nvmlGpmSampleFree")
        addr = ctypes.cast(gpmSample, ctypes.c_void_p).value
        if self._gpm_samples.pop(addr, None) is None:
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)

    def _gpm_state(self, gpmSample) -> _GpmSampleState:
        state = self._gpm_samples.get(ctypes.cast(gpmSample, ctypes.c_void_p).value)
        if state is None:
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        return state

    def nvmlGpmSampleGet(self, device: FakeHandle, gpmSample):
        gpu = self._dev("nvmlGpmSampleGet", device)
        if not gpu.gpm:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        state = self._gpm_state(gpmSample)
        state.device, state.gi, state.time = gpu.index, None, self.clock()
        return gpmSample

    def nvmlGpmMigSampleGet(self, device: FakeHandle, gpuInstanceId: int, gpmSample):
        gpu = self._dev("nvmlGpmMigSampleGet", device)
        if not gpu.gpm or not gpu.mig:
            raise NVMLError(_real.NVML_ERROR_NOT_SUPPORTED)
        if gpuInstanceId not in {d.gi for d in gpu.mig_instances}:
            raise NVMLError(_real.NVML_ERROR_NOT_FOUND)
        state = self._gpm_state(gpmSample)
        state.device, state.gi, state.time = gpu.index, gpuInstanceId, self.clock()
        return gpmSample

    def nvmlGpmMetricsGet(self, metricsGet):
        self._enter("nvmlGpmMetricsGet")
        if metricsGet.version != _real.NVML_GPM_METRICS_GET_VERSION:
            raise NVMLError(_real.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        s1, s2 = self._gpm_state(metricsGet.sample1), self._gpm_state(metricsGet.sample2)
        if s1.time is None or s2.time is None or s1.device != s2.device or s1.gi != s2.gi:
            raise NVMLError(_real.NVML_ERROR_INVALID_ARGUMENT)
        if s1.device in self.lost:
            raise NVMLError(_real.NVML_ERROR_GPU_IS_LOST)
        self.gpm_intervals[(s1.device, s1.gi)] = abs(s2.time - s1.time)
        gpu = self.gpus[s1.device]
        table = gpu.gpm_metrics if s1.gi is None else gpu.mig_gpm_metrics.get(s1.gi, {})
        for i in range(metricsGet.numMetrics):
            m = metricsGet.metrics[i]
            value = table.get(m.metricId)
            if value is None:
                m.nvmlReturn = _real.NVML_ERROR_NOT_SUPPORTED
                m.value = math.nan
            elif isinstance(value, tuple):
                m.nvmlReturn = value[1]
                m.value = 0.0
            else:
                m.nvmlReturn = _real.NVML_SUCCESS
                m.value = value
        return metricsGet


class _HidingFakeNvml(FakeNvml):
    def __getattribute__(self, name: str):
        if name != "__dict__" and name in self.__dict__.get("hidden", ()):
            raise AttributeError(f"module 'pynvml' has no attribute '{name}'")
        return super().__getattribute__(name)


def install(monkeypatch, fake: FakeNvml) -> FakeNvml:
    """Put ``fake`` where ``import pynvml`` finds it, for the test's duration."""
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", fake)
    return fake
