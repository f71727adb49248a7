"""The amd-smi backend: AMD GPUs read by running `amd-smi static/metric/process --json`.

For a node where amdgpu's sysfs is not readable to gputop (hidden from a container, or reached
only through the tool) and for the figures sysfs lacks (ECC counts, energy). amd-smi is a Python
program that takes a second or more per call, so after open() no call runs on a consumer's
thread: a worker thread re-reads `metric` (and `process`, while a consumer shows processes) and
sample() returns at once with the last good readings and their age (``Device.data_age_s``), as
the npu-smi backend does. `static` is read once, in open(): identity, limits, maxima.

Every call is bounded by the shared runner (gputop/backends/smi_runner.py): a timeout, an output
cap, its process group killed on every way out; the worker, the readings' age and the GPUs'
error and lost status are every tool backend's (gputop/backends/tool_backend.py).
What is read from which command, with which permission: docs/backends.md.
"""

from __future__ import annotations

from typing import Any

from gputop.backends.amd.backend import SYSFS_SETS_CAP
from gputop.backends.amd.smi import mapping, output
from gputop.backends.amd.smi.mapping import ToolProcess
from gputop.backends.base import CAP_PROCESSES, BackendError, BackendOptions
from gputop.backends.drm.rates import NS_PER_S, Rates, percent
from gputop.backends.smi_runner import SmiRunner
from gputop.backends.tool_backend import Listing, Readings, Static, ToolBackend, ToolGpu
from gputop.core.bounds import AMD_SMI_TIMEOUT
from gputop.core.model import DeviceInfo, Process

TOOL = "amd-smi"
DEFAULT_TIMEOUT_S = 30.0  # `static` on 8 MI300X reads every board's FRU, firmware and caches


class AmdSmiBackend(ToolBackend[ToolProcess, output.Notes]):
    name = TOOL
    tool = TOOL
    vendor = "amd"
    capabilities = frozenset({CAP_PROCESSES})
    timeout_bound = AMD_SMI_TIMEOUT
    default_timeout_s = DEFAULT_TIMEOUT_S
    metric_attrs = mapping.METRIC_ATTRS
    limit_setter = SYSFS_SETS_CAP

    def __init__(self, options: BackendOptions, **kwargs: Any) -> None:
        super().__init__(options, **kwargs)
        self._shares = Rates()  # each process's gfx engine time, as a share of wall time
        self._listed_at = 0.0  # when `process` last answered: the time of its gfx counters

    def new_notes(self) -> output.Notes:
        return output.Notes()

    # ------------------------------------------------------------------ the calls
    def _read(self, runner: SmiRunner, command: str) -> output.Output:
        found = output.load(runner.run(command, "--json"), command)
        with self._lock:
            self._notes.add(command, found)
        return found

    def read_static(self, runner: SmiRunner) -> Static:
        static = self._read(runner, "static")
        gpus = sorted((g for g in (mapping.static_gpu(raw) for raw in static.gpus)
                       if g is not None), key=lambda g: g.index)
        if not gpus:
            return Static((), None, ())
        driver = next((g.driver_version for g in gpus if g.driver_version), None)
        if driver is None:
            driver = self._version_driver(runner)
        infos = tuple(
            DeviceInfo(index=i, name=g.name, vendor=self.vendor, pci_bus_id=g.bus_id,
                       memory_total_mib=g.attrs["memory_total_mib"],
                       power_limit_min_w=g.attrs["power_limit_min_w"],
                       power_limit_max_w=g.attrs["power_limit_max_w"],
                       clock_sm_max_mhz=g.attrs["clock_sm_max_mhz"],
                       clock_mem_max_mhz=g.attrs["clock_mem_max_mhz"])
            for i, g in enumerate(gpus))
        return Static([ToolGpu(g.index, g.name, g.bus_id, g.attrs) for g in gpus], driver, infos)

    def _version_driver(self, runner: SmiRunner) -> str | None:
        """The amdgpu version from `amd-smi version --json`, where `static` has none."""
        try:
            return mapping.version(self._read(runner, "version").gpus).amdgpu
        except BackendError:
            return None

    def read_metric(self, runner: SmiRunner) -> Readings:
        out = {}
        for gpu in self._read(runner, "metric").gpus:
            index = mapping.gpu_index(gpu)
            if index is not None:
                out[index] = mapping.metric_gpu(gpu)
        return out

    def list_processes(self, runner: SmiRunner) -> dict[int, list[ToolProcess]]:
        known = {g.key for g in self._gpus}
        listed: dict[int, list[ToolProcess]] = {}
        for gpu in self._read(runner, "process").gpus:
            index = mapping.gpu_index(gpu)
            if index in known:
                listed[index] = mapping.processes(gpu)
        self._listed_at = self.clock.monotonic()
        return listed

    def _read_processes(self, runner: SmiRunner) -> dict[int, tuple[Process, ...]]:
        rows = super()._read_processes(runner)
        self._shares.prune([(str(index), p.pid) for index, ps in rows.items() for p in ps])
        return rows

    def listing(self, key: int, listed: ToolProcess) -> Listing:
        share = self._shares.rate((str(key), listed.pid), listed.gfx_ns,
                                  self._listed_at * NS_PER_S)
        return Listing(listed.name, listed.vram_mib, percent(share))

    def lost_reason(self, gpu: ToolGpu) -> str:
        return f"no longer listed by `{TOOL} metric`"
