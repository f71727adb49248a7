"""The rocm-smi backend: AMD GPUs read by running ROCm's older `rocm-smi … --json`.

For a node where rocm-smi is the only AMD tool (ROCm before amd-smi, as on many clusters) and
amdgpu's sysfs is not readable to gputop (hidden from a container). One call prints everything,
identity and readings: it is run with the flags Telegraf's ``amd_rocm_smi`` plugin runs, whose
output the captures of tests/fixtures/amd are. rocm-smi is a Python program that takes a second
or more per call, so after open() no call runs on a consumer's thread: a worker thread re-runs it
and sample() returns at once with the last good readings and their age (``Device.data_age_s``),
as the amd-smi backend does; each card's identity is the first call's.

Every call is bounded by the shared runner (gputop/backends/smi_runner.py): a timeout, an output
cap, its process group killed on every way out; the worker, the readings' age and the GPUs'
error and lost status are every tool backend's (gputop/backends/tool_backend.py).
What is read from which key, with which permission: docs/backends.md.
"""

from __future__ import annotations

from gputop.backends.amd.backend import SYSFS_SETS_CAP
from gputop.backends.amd.rocm import mapping, output
from gputop.backends.smi_runner import SmiRunner
from gputop.backends.tool_backend import Listed, Readings, Static, ToolBackend, ToolGpu
from gputop.core.bounds import ROCM_SMI_TIMEOUT
from gputop.core.model import DeviceInfo

TOOL = "rocm-smi"
# Telegraf's amd_rocm_smi flags (plugins/inputs/amd_rocm_smi), the captures' own: each key read
# has been seen in a real answer to exactly this call.
ARGS = ("-o", "-l", "-m", "-M", "-g", "-c", "-t", "-u", "-i", "-f", "-p", "-P", "-s", "-S", "-v",
        "--showreplaycount", "--showpids", "--showdriverversion", "--showmemvendor",
        "--showfwinfo", "--showproductname", "--showserial", "--showuniqueid", "--showbus",
        "--showpendingpages", "--showpagesinfo", "--showmeminfo", "all", "--showretiredpages",
        "--showunreservablepages", "--showmemuse", "--showvoltage", "--showtopo",
        "--showtopoweight", "--showtopohops", "--showtopotype", "--showtoponuma", "--json")
WHAT = f"`{TOOL} … --json`"  # how errors name the call (its 38 flags would not fit a line)
DEFAULT_TIMEOUT_S = 30.0  # the topology flags walk every pair of GPUs of an 8-GPU node


class RocmSmiBackend(ToolBackend[Listed, output.Notes]):
    name = TOOL
    tool = TOOL
    vendor = "amd"
    capabilities: frozenset[str] = frozenset()
    timeout_bound = ROCM_SMI_TIMEOUT
    default_timeout_s = DEFAULT_TIMEOUT_S
    metric_attrs = mapping.READING_ATTRS
    limit_setter = SYSFS_SETS_CAP

    def new_notes(self) -> output.Notes:
        return output.Notes()

    # ------------------------------------------------------------------ the calls
    def _read(self, runner: SmiRunner) -> output.Output:
        found = output.load(runner.run(*ARGS), WHAT)
        with self._lock:
            self._notes.add(found)
        return found

    def read_static(self, runner: SmiRunner) -> Static:
        """Run rocm-smi once: each card's identity (the GPUs' keys are their DRM card numbers,
        "card3") and the first readings."""
        first = self._read(runner)
        gpus = []
        for number, card in first.cards.items():
            identity = mapping.identity(card)
            gpus.append(ToolGpu(number, identity.name, identity.bus_id, identity.attrs))
        readings = self._readings_of(first)
        infos = tuple(DeviceInfo(index=i, name=g.name, vendor=self.vendor, pci_bus_id=g.bus_id,
                                 memory_total_mib=readings.get(g.key, {}).get("memory_total_mib"))
                      for i, g in enumerate(gpus))
        return Static(gpus, mapping.driver_version(first.system), infos, readings)

    @staticmethod
    def _readings_of(found: output.Output) -> Readings:
        return {n: mapping.readings(card) for n, card in found.cards.items()}

    def read_metric(self, runner: SmiRunner) -> Readings:
        return self._readings_of(self._read(runner))

    def _round(self) -> None:
        """Run rocm-smi only where a consumer wants a figure it prints."""
        with self._lock:
            wanted = self._want_metric
        if wanted:
            super()._round()

    def lost_reason(self, gpu: ToolGpu) -> str:
        return f"card{gpu.key} no longer listed by {TOOL}"
