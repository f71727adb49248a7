"""The amd-smi backend: AMD GPUs read by running `amd-smi static/metric/process --json`.

For a node where amdgpu's sysfs is not readable to gputop (hidden from a container, or reached
only through the tool) and for the figures sysfs lacks (ECC counts, energy). amd-smi is a Python
program that takes a second or more per call, so after open() no call runs on a consumer's
thread: a worker thread re-reads `metric` (and `process`, while a consumer shows processes) and
sample() returns at once with the last good readings and their age (``Device.data_age_s``), as
the npu-smi backend does. `static` is read once, in open(): identity, limits, maxima.

Every call is bounded by the shared runner (gputop/backends/smi_runner.py): a timeout, an output
cap, its process group killed on every way out. A read that failed makes every GPU's status
"error" from the next sample on, its reason naming the failure; the last good readings stay.
What is read from which command, with which permission: docs/backends.md.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gputop.backends.amd.smi import mapping, output
from gputop.backends.amd.smi.mapping import StaticGpu, ToolProcess
from gputop.backends.base import (
    CAP_PROCESSES,
    REAL_CLOCK,
    Backend,
    BackendError,
    BackendOptions,
    BackendUnavailable,
    Clock,
    hostname,
)
from gputop.backends.drm.rates import NS_PER_S, Rates, percent
from gputop.backends.smi_runner import SmiRunner, find_smi
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, DeviceInfo, NodeInfo, Process, Snapshot
from gputop.host.processes import HostProcesses

TOOL = "amd-smi"
VENDOR = "amd"
PROCESSES = "processes"
DEFAULT_TIMEOUT_S = 30.0  # `static` on 8 MI300X reads every board's FRU, firmware and caches
TIMEOUT_ENV = "GPUTOP_AMD_SMI_TIMEOUT"
REFRESH_S = 1.0  # how often `metric` is re-read (back to back when amd-smi is slower)
MIN_GAP_S = 0.2  # rest between two reads even when amd-smi is slower than REFRESH_S


def timeout_from_env(default: float = DEFAULT_TIMEOUT_S) -> float:
    """``GPUTOP_AMD_SMI_TIMEOUT``, checked against its documented range (gputop.core.bounds)."""
    from gputop.core.bounds import AMD_SMI_TIMEOUT

    assert AMD_SMI_TIMEOUT.name == TIMEOUT_ENV
    return float(AMD_SMI_TIMEOUT.from_env(os.environ, default))


@dataclass(frozen=True)
class _Reading:
    """One round of the worker: each GPU's metric attributes (by the tool's index) and
    processes, when they were read."""

    metric: dict[int, dict[str, Any]] | None
    processes: dict[int, tuple[Process, ...]] | None
    at: float


class AmdSmiBackend(Backend):
    name = "amd-smi"
    capabilities = frozenset({CAP_PROCESSES})

    def __init__(self, options: BackendOptions, *, refresh_s: float = REFRESH_S,
                 timeout_s: float | None = None, clock: Clock = REAL_CLOCK,
                 host: HostProcesses | None = None) -> None:
        self.options = options
        self.refresh_s = refresh_s
        self.timeout_s = timeout_s
        self.clock = clock
        self.host = host or HostProcesses()
        self._runner: SmiRunner | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._info: NodeInfo | None = None
        self._gpus: list[StaticGpu] = []
        self._metric: dict[int, dict[str, Any]] = {}
        self._metric_at: float | None = None
        self._procs: dict[int, tuple[Process, ...]] = {}
        self._error: BaseException | None = None
        self._want_metric = True
        self._want_procs = True
        self._shares = Rates()  # each process's gfx engine time, as a share of wall time
        self._notes = output.Notes()
        self.reads = 0  # rounds read by the worker (tests wait on it)

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        executable = find_smi(TOOL, None)
        self.timeout_s = self.timeout_s if self.timeout_s is not None else timeout_from_env()
        self._runner = SmiRunner(TOOL, executable, self.timeout_s)
        try:
            static = self._read("static")
        except BackendError as exc:
            self._runner.close()
            raise BackendUnavailable(f"amd-smi is present but unusable: {exc}") from exc
        gpus = [g for g in (mapping.static_gpu(raw) for raw in static.gpus) if g is not None]
        if not gpus:
            self._runner.close()
            raise BackendUnavailable("amd-smi lists no GPUs")
        self._gpus = sorted(gpus, key=lambda g: g.index)
        driver = next((g.driver_version for g in self._gpus if g.driver_version), None)
        if driver is None:
            driver = self._version_driver()
        infos = tuple(
            DeviceInfo(index=i, name=g.name, vendor=VENDOR, pci_bus_id=g.bus_id,
                       memory_total_mib=g.attrs["memory_total_mib"],
                       power_limit_min_w=g.attrs["power_limit_min_w"],
                       power_limit_max_w=g.attrs["power_limit_max_w"],
                       clock_sm_max_mhz=g.attrs["clock_sm_max_mhz"],
                       clock_mem_max_mhz=g.attrs["clock_mem_max_mhz"])
            for i, g in enumerate(self._gpus))
        self._info = NodeInfo(hostname(), self.name, driver, None, infos)
        # The first readings are taken here, so that the first sample (`gputop snapshot`) has
        # them; a failure is kept for the samples to report, not raised: `static` answered.
        self._round()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="gputop-amd-smi", daemon=True)
        self._thread.start()

    def _version_driver(self) -> str | None:
        """The amdgpu version from `amd-smi version --json`, where `static` has none."""
        try:
            return mapping.version(self._read("version").gpus).amdgpu
        except BackendError:
            return None

    def limit_commands(self, limits: Mapping[int, float]) -> list[str]:
        """Return no command: this backend sets no power cap, and nvidia-smi's would not apply."""
        return []

    def close(self) -> None:
        self._stop.set()
        if self._runner is not None:
            self._runner.close()  # kills a call in flight, so the worker ends at once
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None

    def info(self) -> NodeInfo:
        if self._info is None:
            raise BackendError("amd-smi backend not open")
        return self._info

    def notes(self) -> tuple[str, ...]:
        with self._lock:
            return self._notes.lines()

    # ------------------------------------------------------------------ the calls
    def _read(self, command: str) -> output.Output:
        assert self._runner is not None
        found = output.load(self._runner.run(command, "--json"), command)
        with self._lock:
            self._notes.add(command, found)
        return found

    def _round(self) -> None:
        """Read what the consumers want; store it, or the first failure. A failing `metric`
        does not keep `process` from being read, nor the other way round."""
        with self._lock:
            want_metric, want_procs = self._want_metric, self._want_procs
        metric: dict[int, dict[str, Any]] | None = None
        procs: dict[int, tuple[Process, ...]] | None = None
        failures: list[BackendError] = []
        if want_metric:
            try:
                metric = self._read_metric()
            except BackendError as exc:
                failures.append(exc)
        if want_procs and not self._stop.is_set():
            try:
                procs = self._read_processes()
            except BackendError as exc:
                failures.append(exc)
        now = self.clock.monotonic()
        with self._lock:
            if metric is not None:
                self._metric, self._metric_at = metric, now
            if procs is not None:
                self._procs = procs
            self._error = failures[0] if failures else None
            self.reads += 1

    def _read_metric(self) -> dict[int, dict[str, Any]]:
        out = {}
        for gpu in self._read("metric").gpus:
            index = mapping.gpu_index(gpu)
            if index is not None:
                out[index] = mapping.metric_gpu(gpu)
        return out

    def _read_processes(self) -> dict[int, tuple[Process, ...]]:
        by_index = {g.index: g for g in self._gpus}
        listed: dict[int, list[ToolProcess]] = {}
        for gpu in self._read("process").gpus:
            index = mapping.gpu_index(gpu)
            if index in by_index:
                listed[index] = mapping.processes(gpu)
        now = self.clock.monotonic()
        out: dict[int, tuple[Process, ...]] = {}
        keys, all_pids = [], []
        for index, procs in listed.items():
            bus = by_index[index].bus_id
            facts_by_pid = self.host.lookup_device(bus, [p.pid for p in procs])
            rows = []
            for proc in procs:
                facts = facts_by_pid[proc.pid]
                owner = facts.owner
                keys.append((str(index), proc.pid))
                rows.append(Process(
                    pid=proc.pid,
                    user=facts.user,
                    name=facts.name or proc.name,
                    command=facts.command,
                    gpu_memory_mib=proc.vram_mib,
                    sm_pct=percent(self._shares.rate((str(index), proc.pid), proc.gfx_ns,
                                                     now * NS_PER_S)),
                    cpu_pct=facts.cpu_pct,
                    host_memory_mib=facts.host_memory_mib,
                    started=facts.started,
                    container=owner.container,
                    job=owner.job,
                    namespace_pid=owner.namespace_pid,
                    outside_pid_namespace=facts.outside_pid_namespace,
                ))
                all_pids.append(proc.pid)
            out[index] = tuple(rows)
        self._shares.prune(keys)
        self.host.prune(all_pids)
        return out

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = self.clock.monotonic()
            self._round()
            elapsed = self.clock.monotonic() - started
            self._stop.wait(max(MIN_GAP_S, self.refresh_s - elapsed))

    # ------------------------------------------------------------------ sampling (never blocks)
    def sample(self, devices: Sequence[int] | None = None, *,
               wants: Wants | None = EVERYTHING) -> Snapshot:
        info = self.info()
        now = self.clock.monotonic()
        with self._lock:
            # the worker's next round reads what this consumer wants, and no more
            self._want_metric = wants is None or bool(mapping.METRIC_ATTRS & set(wants))
            self._want_procs = wants is None or PROCESSES in wants
            metric, procs = self._metric, self._procs
            metric_at, error = self._metric_at, self._error
        age = round(max(0.0, now - metric_at), 3) if metric_at is not None else None
        chosen = range(len(self._gpus)) if devices is None else devices
        out = []
        for i in chosen:
            gpu = self._gpus[i]
            device = Device(index=i, name=gpu.name, vendor=VENDOR, pci_bus_id=gpu.bus_id,
                            data_age_s=age, **gpu.attrs, **metric.get(gpu.index, {}),
                            processes=procs.get(gpu.index, ()))
            out.append(self._status_of(device, gpu, metric, metric_at, error, age))
        return Snapshot(host=info.host, time=self.clock.wall(), backend=self.name,
                        devices=tuple(out), driver_version=info.driver_version)

    @staticmethod
    def _status_of(device: Device, gpu: StaticGpu, metric: dict[int, dict[str, Any]],
                   metric_at: float | None, error: BaseException | None,
                   age: float | None) -> Device:
        if error is not None:
            when = (f"; readings are {age:.0f} s old" if age is not None
                    else "; no reading yet")
            return replace(device, status="error",
                           status_reason=f"amd-smi's last read failed ({error}){when}")
        if metric_at is not None and gpu.index not in metric:
            return replace(device, status="lost",
                           status_reason="no longer listed by `amd-smi metric`")
        return device
