"""The fake pynvml stays faithful to the installed nvidia-ml-py: names, signatures, types, codes."""

from __future__ import annotations

import inspect

import pynvml as real
import pytest

from tests.support.fake_pynvml import FakeNvml, FakeProcess, a100, h100, node


def fake_functions() -> list[str]:
    return [n for n in vars(FakeNvml) if n.startswith("nvml") and callable(getattr(FakeNvml, n))]


@pytest.mark.parametrize("name", fake_functions())
def test_every_fake_function_has_the_real_name_and_signature(name) -> None:
    assert hasattr(real, name), f"nvidia-ml-py has no {name}"
    fake_params = list(inspect.signature(getattr(FakeNvml, name)).parameters)[1:]  # no self
    real_params = list(inspect.signature(getattr(real, name)).parameters)
    assert fake_params == real_params


def test_errors_are_nvidia_ml_py_own_classes_and_codes() -> None:
    nv = FakeNvml([h100(0)])
    for code, cls in [(3, "NVMLError_NotSupported"), (4, "NVMLError_NoPermission"),
                      (15, "NVMLError_GpuIsLost"), (999, "NVMLError_Unknown"),
                      (13, "NVMLError_FunctionNotFound"), (12, "NVMLError_LibraryNotFound"),
                      (1, "NVMLError_Uninitialized"), (6, "NVMLError_NotFound")]:
        assert getattr(nv, cls) is getattr(real, cls)
        err = nv.NVMLError(code)
        assert type(err) is getattr(real, cls) and err.value == code
    with pytest.raises(real.NVMLError_Uninitialized):
        nv.nvmlDeviceGetCount()  # before nvmlInit, as the real library answers
    assert nv.NVML_VALUE_NOT_AVAILABLE_ulonglong.value == 2**64 - 1


def test_return_shapes_are_the_real_structs() -> None:
    nv = FakeNvml([h100(0, [FakeProcess(pid=9_000_001, used_mib=None)])])
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    assert isinstance(nv.nvmlDeviceGetMemoryInfo(h), real.c_nvmlMemory_t)
    mem = nv.nvmlDeviceGetMemoryInfo(h, real.nvmlMemory_v2)
    assert isinstance(mem, real.c_nvmlMemory_v2_t)
    assert mem.total == mem.reserved + mem.used + mem.free
    assert isinstance(nv.nvmlDeviceGetUtilizationRates(h), real.c_nvmlUtilization_t)
    assert isinstance(nv.nvmlDeviceGetPciInfo(h), real.nvmlPciInfo_t)
    (proc,) = nv.nvmlDeviceGetComputeRunningProcesses_v3(h)
    assert isinstance(proc, real.nvmlFriendlyObject)
    assert vars(proc) == {"pid": 9_000_001, "usedGpuMemory": None,
                          "gpuInstanceId": 0xFFFFFFFF, "computeInstanceId": 0xFFFFFFFF}
    (sample,) = nv.nvmlDeviceGetProcessUtilization(h, 0)
    assert isinstance(sample, real.c_nvmlProcessUtilizationSample_t)
    assert (sample.pid, sample.smUtil) == (9_000_001, 50)
    assert isinstance(nv.nvmlDeviceGetFieldValues(h, [real.NVML_FI_DEV_MEMORY_TEMP])[0],
                      real.c_nvmlFieldValue_t)
    assert isinstance(nv.nvmlGpmQueryDeviceSupport(h), real.c_nvmlGpmSupport_t)
    assert isinstance(nv.nvmlGpmSampleAlloc(), real.c_nvmlGpmSample_t)
    assert nv.nvmlDeviceGetEccMode(h) == [1, 1]
    assert nv.nvmlDeviceGetPowerManagementLimitConstraints(h) == [200_000, 700_000]


def test_realistic_h100_and_a100() -> None:
    nv = FakeNvml([h100(0), a100(1)])
    nv.nvmlInit()
    hopper, ampere = (nv.nvmlDeviceGetHandleByIndex(i) for i in (0, 1))
    assert nv.nvmlDeviceGetMemoryInfo(hopper, real.nvmlMemory_v2).total == 81559 * 2**20
    assert nv.nvmlDeviceGetMemoryInfo(hopper, real.nvmlMemory_v2).reserved == 479 * 2**20
    assert nv.nvmlDeviceGetMaxClockInfo(hopper, real.NVML_CLOCK_SM) == 1980
    assert nv.nvmlGpmQueryDeviceSupport(hopper).isSupportedDevice == 1
    assert nv.nvmlGpmQueryDeviceSupport(ampere).isSupportedDevice == 0
    with pytest.raises(real.NVMLError_NotSupported):
        nv.nvmlGpmSampleGet(ampere, nv.nvmlGpmSampleAlloc())


def test_no_library_and_mismatch_fail_in_init() -> None:
    with pytest.raises(real.NVMLError_LibraryNotFound):
        FakeNvml(node(1), library=False).nvmlInit()
    nv = FakeNvml(node(1))
    nv.init_error = real.NVML_ERROR_LIB_RM_VERSION_MISMATCH
    with pytest.raises(real.NVMLError_LibRmVersionMismatch):
        nv.nvmlInit()


def test_process_utilization_without_new_samples_is_not_found() -> None:
    t = [100.0]
    nv = FakeNvml(node(1, 2), clock=lambda: t[0])
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    stamp = max(s.timeStamp for s in nv.nvmlDeviceGetProcessUtilization(h, 0))
    with pytest.raises(real.NVMLError_NotFound):
        nv.nvmlDeviceGetProcessUtilization(h, stamp)
    t[0] += 1
    assert len(nv.nvmlDeviceGetProcessUtilization(h, stamp)) == 2


def test_mig_as_the_driver_documents_it() -> None:
    from tests.support.fake_pynvml import mig_h100

    nv = FakeNvml([mig_h100(0)])
    nv.nvmlInit()
    parent = nv.nvmlDeviceGetHandleByIndex(0)
    assert nv.nvmlDeviceGetMigMode(parent) == [1, 1]
    # no utilization of any engine, nor per process, on a MIG-enabled GPU
    for fn, args in [("nvmlDeviceGetUtilizationRates", ()), ("nvmlDeviceGetEncoderUtilization", ()),
                     ("nvmlDeviceGetDecoderUtilization", ()),
                     ("nvmlDeviceGetProcessUtilization", (0,))]:
        with pytest.raises(real.NVMLError_NotSupported):
            getattr(nv, fn)(parent, *args)
    count = nv.nvmlDeviceGetMaxMigDeviceCount(parent)
    handles = []
    for i in range(count):
        try:
            handles.append(nv.nvmlDeviceGetMigDeviceHandleByIndex(parent, i))
        except real.NVMLError_NotFound:  # an empty slot
            continue
    assert count == 7 and len(handles) == 4
    big = handles[0]
    assert nv.nvmlDeviceGetName(big) == "NVIDIA H100 80GB HBM3 MIG 3g.40gb"
    assert nv.nvmlDeviceGetUUID(big).startswith("MIG-")
    assert (nv.nvmlDeviceGetGpuInstanceId(big), nv.nvmlDeviceGetComputeInstanceId(big)) == (2, 0)
    assert nv.nvmlDeviceGetAttributes(big).multiprocessorCount == 60
    assert nv.nvmlDeviceGetMemoryInfo(big).total == 40448 * 1024 * 1024
    assert nv.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(big).index == parent.index
    with pytest.raises(real.NVMLError_InvalidArgument):
        nv.nvmlDeviceGetGpuInstanceId(parent)  # not a MIG device
    # a MIG device lists its own instance's processes; the parent (as root) all, with their ids
    assert sorted(p.pid for p in nv.nvmlDeviceGetComputeRunningProcesses_v3(big)) == \
        [21180, 21181, 21198]
    assert nv.nvmlDeviceGetComputeRunningProcesses_v3(handles[1]) == []
    assert {p.gpuInstanceId for p in nv.nvmlDeviceGetComputeRunningProcesses_v3(parent)} == {2}
