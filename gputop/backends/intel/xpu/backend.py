"""The xpu-smi backend: Intel data-center GPUs (Max, Flex) read by running xpu-smi v1.

`discovery --dump` is read once, in open(): each device's id, name, PCI address, driver, memory
size and highest clock. Then a worker thread re-reads `dump -d -1 -m … -n 1` (one row per device)
and `ps` (while a consumer shows processes), and sample() returns at once with the last good
readings and their age (``Device.data_age_s``), as the amd-smi and npu-smi backends do: xpu-smi
asks its service or Level Zero each time, which takes a second or more.

Every call is bounded by the shared runner (gputop/backends/smi_runner.py): a timeout, an output
cap, its process group killed on every way out; the worker, the readings' age and the GPUs'
error and lost status are every tool backend's (gputop/backends/tool_backend.py).
A metric xpu-smi prints blank or N/A (utilization on Max 1550 and Flex 170) is None, never 0,
and said once through notes(). What is read from which command: docs/backends.md.
"""

from __future__ import annotations

from gputop.backends.base import CAP_PROCESSES
from gputop.backends.intel.xpu import mapping, output
from gputop.backends.intel.xpu.output import ToolProcess
from gputop.backends.smi_runner import SmiRunner
from gputop.backends.tool_backend import Listing, Readings, Static, ToolBackend, ToolGpu
from gputop.core.bounds import XPU_SMI_TIMEOUT
from gputop.core.model import DeviceInfo

TOOL = "xpu-smi"
DEFAULT_TIMEOUT_S = 15.0  # `dump -i 1 -n 1` waits out its one-second interval before it prints


class XpuSmiBackend(ToolBackend[ToolProcess, mapping.Notes]):
    name = TOOL
    tool = TOOL
    vendor = "intel"
    capabilities = frozenset({CAP_PROCESSES})
    timeout_bound = XPU_SMI_TIMEOUT
    default_timeout_s = DEFAULT_TIMEOUT_S
    metric_attrs = mapping.METRIC_ATTRS

    def new_notes(self) -> mapping.Notes:
        return mapping.Notes()

    # ------------------------------------------------------------------ the calls
    def read_static(self, runner: SmiRunner) -> Static:
        what = " ".join((TOOL, *mapping.DISCOVERY_ARGS))
        rows = output.discovery(runner.run(*mapping.DISCOVERY_ARGS), what)
        gpus = sorted((g for g in (mapping.static_gpu(row) for row in rows) if g is not None),
                      key=lambda g: g.device)
        driver = next((g.driver_version for g in gpus if g.driver_version), None)
        infos = tuple(
            DeviceInfo(index=i, name=g.name, vendor=self.vendor, pci_bus_id=g.bus_id,
                       memory_total_mib=g.attrs["memory_total_mib"],
                       clock_sm_max_mhz=g.attrs["clock_sm_max_mhz"])
            for i, g in enumerate(gpus))
        return Static([ToolGpu(g.device, g.name, g.bus_id, g.attrs) for g in gpus], driver, infos)

    def read_metric(self, runner: SmiRunner) -> Readings:
        what = " ".join((TOOL, *mapping.DUMP_ARGS))
        found = output.dump(runner.run(*mapping.DUMP_ARGS), what)
        with self._lock:
            self._notes.add(found)
        out = {}
        for gpu in self._gpus:
            values = mapping.metric_values(found, gpu.key)
            if values is not None:
                out[gpu.key] = values
        return out

    def list_processes(self, runner: SmiRunner) -> dict[int, list[ToolProcess]]:
        listed = output.ps(runner.run("ps"), f"{TOOL} ps")
        return {gpu.key: [p for p in listed if p.device == gpu.key] for gpu in self._gpus}

    def listing(self, key: int, listed: ToolProcess) -> Listing:
        return Listing(mapping.process_name(listed), mapping.process_memory_mib(listed))

    def lost_reason(self, gpu: ToolGpu) -> str:
        return f"no row of its own in `{TOOL} dump`"
