"""Process lists and per-process utilisation in one NVML call each, where the driver allows it.

pynvml's wrappers always make two calls: one with an empty buffer to learn the size, then the
fill. NVML itself fills a buffer that is large enough in one call, so a buffer kept from the last
tick (sized for the processes seen then, with room to grow) makes one call per list per tick; it
takes a second only when more processes appeared than the buffer holds.

Used where the binding is nvidia-ml-py (which exposes its function lookup and structs); a binding
without them (a test fake, a future rename) goes through the wrappers as before.
"""

from __future__ import annotations

import ctypes
from typing import Any

FIRST_SIZE = 8

# the functions whose buffer is the 24-byte process struct of _v2/_v3 (unsuffixed: 16 bytes)
DIRECT_LISTS = ("nvmlDeviceGetComputeRunningProcesses_v3",
                "nvmlDeviceGetComputeRunningProcesses_v2",
                "nvmlDeviceGetGraphicsRunningProcesses_v3",
                "nvmlDeviceGetGraphicsRunningProcesses_v2")
UTILIZATION = "nvmlDeviceGetProcessUtilization"


class ProcessBuffers:
    """One device's buffers, kept from tick to tick: function name -> ctypes array."""

    __slots__ = ("arrays",)

    def __init__(self) -> None:
        self.arrays: dict[str, Any] = {}


def direct(nv: Any) -> bool:
    """Whether this binding lets us call NVML with our own buffers."""
    return (hasattr(nv, "_nvmlGetFunctionPointer") and hasattr(nv, "c_nvmlProcessInfo_v2_t")
            and hasattr(nv, "c_nvmlProcessUtilizationSample_t"))


def _call_sized(nv: Any, name: str, struct: type[ctypes.Structure], buffers: ProcessBuffers,
                call) -> tuple:
    """``call(fn, array, count)`` with the kept buffer; once more, larger, if it was too small.
    Returns (array, count) after a success; raises NVMLError otherwise."""
    fn = nv._nvmlGetFunctionPointer(name)
    array = buffers.arrays.get(name)
    if array is None:
        array = (struct * FIRST_SIZE)()
    count = ctypes.c_uint(len(array))
    ret = call(fn, array, count)
    if ret == nv.NVML_ERROR_INSUFFICIENT_SIZE:
        array = (struct * (count.value * 2 + 5))()  # room to grow, as pynvml sizes it
        count = ctypes.c_uint(len(array))
        ret = call(fn, array, count)
    if ret != nv.NVML_SUCCESS:
        raise nv.NVMLError(ret)
    buffers.arrays[name] = array
    return array, count.value


def running(nv: Any, name: str, handle: Any, buffers: ProcessBuffers) -> list[tuple[int, Any]]:
    """(pid, used GPU memory in bytes or None) of one of DIRECT_LISTS."""
    array, n = _call_sized(nv, name, nv.c_nvmlProcessInfo_v2_t, buffers,
                           lambda fn, a, c: fn(handle, ctypes.byref(c), a))
    na = nv.NVML_VALUE_NOT_AVAILABLE_ulonglong.value
    return [(p.pid, None if p.usedGpuMemory == na else p.usedGpuMemory) for p in array[:n]]


def utilization(nv: Any, handle: Any, since: int,
                buffers: ProcessBuffers) -> list[tuple[int, int, int]]:
    """(pid, sample time µs, SM %) of the driver's samples newer than ``since``."""
    stamp = ctypes.c_ulonglong(since)
    array, n = _call_sized(nv, UTILIZATION, nv.c_nvmlProcessUtilizationSample_t, buffers,
                           lambda fn, a, c: fn(handle, a, ctypes.byref(c), stamp))
    return [(s.pid, s.timeStamp, s.smUtil) for s in array[:n]]
