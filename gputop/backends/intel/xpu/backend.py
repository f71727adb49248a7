"""The xpu-smi backend: Intel data-center GPUs (Max, Flex) read by running xpu-smi v1.

`discovery --dump` is read once, in open(): each device's id, name, PCI address, driver, memory
size and highest clock. Then a worker thread re-reads `dump -d -1 -m … -n 1` (one row per device)
and `ps` (while a consumer shows processes), and sample() returns at once with the last good
readings and their age (``Device.data_age_s``), as the amd-smi and npu-smi backends do: xpu-smi
asks its service or Level Zero each time, which takes a second or more.

Every call is bounded by the shared runner (gputop/backends/smi_runner.py): a timeout, an output
cap, its process group killed on every way out. A read that failed makes every GPU's status
"error" from the next sample on, its reason naming the failure; the last good readings stay.
A metric xpu-smi prints blank or N/A (utilization on Max 1550 and Flex 170) is None, never 0,
and said once through notes(). What is read from which command: docs/backends.md.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

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
from gputop.backends.intel.xpu import mapping, output
from gputop.backends.intel.xpu.mapping import StaticGpu
from gputop.backends.smi_runner import SmiRunner, find_smi
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, DeviceInfo, NodeInfo, Process, Snapshot
from gputop.host.processes import HostProcesses

TOOL = "xpu-smi"
VENDOR = "intel"
PROCESSES = "processes"
DEFAULT_TIMEOUT_S = 15.0  # `dump -i 1 -n 1` waits out its one-second interval before it prints
TIMEOUT_ENV = "GPUTOP_XPU_SMI_TIMEOUT"
REFRESH_S = 1.0  # how often `dump` is re-read (back to back when xpu-smi is slower)
MIN_GAP_S = 0.2  # rest between two reads even when xpu-smi is slower than REFRESH_S


def timeout_from_env(default: float = DEFAULT_TIMEOUT_S) -> float:
    """``GPUTOP_XPU_SMI_TIMEOUT``, checked against its documented range (gputop.core.bounds)."""
    from gputop.core.bounds import XPU_SMI_TIMEOUT

    assert XPU_SMI_TIMEOUT.name == TIMEOUT_ENV
    return float(XPU_SMI_TIMEOUT.from_env(os.environ, default))


class XpuSmiBackend(Backend):
    name = "xpu-smi"
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
        self._notes = mapping.Notes()
        self.reads = 0  # rounds read by the worker (tests wait on it)

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        executable = find_smi(TOOL, None)
        self.timeout_s = self.timeout_s if self.timeout_s is not None else timeout_from_env()
        self._runner = SmiRunner(TOOL, executable, self.timeout_s)
        what = " ".join((TOOL, *mapping.DISCOVERY_ARGS))
        try:
            rows = output.discovery(self._runner.run(*mapping.DISCOVERY_ARGS), what)
        except BackendError as exc:
            self._runner.close()
            raise BackendUnavailable(f"xpu-smi is present but unusable: {exc}") from exc
        gpus = [g for g in (mapping.static_gpu(row) for row in rows) if g is not None]
        if not gpus:
            self._runner.close()
            raise BackendUnavailable("xpu-smi lists no GPUs")
        self._gpus = sorted(gpus, key=lambda g: g.device)
        driver = next((g.driver_version for g in self._gpus if g.driver_version), None)
        infos = tuple(
            DeviceInfo(index=i, name=g.name, vendor=VENDOR, pci_bus_id=g.bus_id,
                       memory_total_mib=g.attrs["memory_total_mib"],
                       clock_sm_max_mhz=g.attrs["clock_sm_max_mhz"])
            for i, g in enumerate(self._gpus))
        self._info = NodeInfo(hostname(), self.name, driver, None, infos)
        # The first readings are taken here, so that the first sample (`gputop snapshot`) has
        # them; a failure is kept for the samples to report, not raised: `discovery` answered.
        self._round()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="gputop-xpu-smi", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._runner is not None:
            self._runner.close()  # kills a call in flight, so the worker ends at once
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None

    def info(self) -> NodeInfo:
        if self._info is None:
            raise BackendError("xpu-smi backend not open")
        return self._info

    def notes(self) -> tuple[str, ...]:
        with self._lock:
            return self._notes.lines()

    # ------------------------------------------------------------------ the calls
    def _round(self) -> None:
        """Read what the consumers want; store it, or the first failure. A failing `dump` does
        not keep `ps` from being read, nor the other way round."""
        with self._lock:
            want_metric, want_procs = self._want_metric, self._want_procs
        metric: dict[int, dict[str, Any]] | None = None
        procs: dict[int, tuple[Process, ...]] | None = None
        failures: list[BackendError] = []
        if want_metric:
            try:
                metric = self._read_dump()
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

    def _read_dump(self) -> dict[int, dict[str, Any]]:
        assert self._runner is not None
        what = " ".join((TOOL, *mapping.DUMP_ARGS))
        found = output.dump(self._runner.run(*mapping.DUMP_ARGS), what)
        with self._lock:
            self._notes.add(found)
        out = {}
        for gpu in self._gpus:
            values = mapping.metric_values(found, gpu.device)
            if values is not None:
                out[gpu.device] = values
        return out

    def _read_processes(self) -> dict[int, tuple[Process, ...]]:
        assert self._runner is not None
        listed = output.ps(self._runner.run("ps"), f"{TOOL} ps")
        out: dict[int, tuple[Process, ...]] = {}
        all_pids = []
        for gpu in self._gpus:
            mine = [p for p in listed if p.device == gpu.device]
            facts_by_pid = self.host.lookup_device(gpu.bus_id, [p.pid for p in mine])
            rows = []
            for proc in mine:
                facts = facts_by_pid[proc.pid]
                owner = facts.owner
                rows.append(Process(
                    pid=proc.pid,
                    user=facts.user,
                    name=facts.name or mapping.process_name(proc),
                    command=facts.command,
                    gpu_memory_mib=mapping.process_memory_mib(proc),
                    cpu_pct=facts.cpu_pct,
                    host_memory_mib=facts.host_memory_mib,
                    started=facts.started,
                    container=owner.container,
                    job=owner.job,
                    namespace_pid=owner.namespace_pid,
                    outside_pid_namespace=facts.outside_pid_namespace,
                ))
                all_pids.append(proc.pid)
            out[gpu.device] = tuple(rows)
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
                            data_age_s=age, **gpu.attrs, **metric.get(gpu.device, {}),
                            processes=procs.get(gpu.device, ()))
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
                           status_reason=f"xpu-smi's last read failed ({error}){when}")
        if metric_at is not None and gpu.device not in metric:
            return replace(device, status="lost",
                           status_reason="no row of its own in `xpu-smi dump`")
        return device

