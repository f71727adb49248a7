"""The life of a backend that reads a vendor's management tool (amd-smi, rocm-smi, xpu-smi).

Such a tool is a program that takes a second or more per call, so after open() no call runs on a
consumer's thread: open() finds the tool on PATH and reads what does not change (once), then a
worker thread re-reads the readings (and the process list, while a consumer shows processes),
and sample() returns at once with the last good readings and their age (``Device.data_age_s``).
A round that failed makes every GPU's status "error" from the next sample on, its reason naming
the failure; the last good readings stay. A GPU the tool no longer lists is "lost".

Each call is one run of gputop/backends/smi_runner.py (bounded, its process group killed on every
way out); close() kills the call in flight, so the worker ends at once. A vendor's backend says
only what is its own: the calls it runs and how their answers map to the model (the hooks below).
"""

from __future__ import annotations

import os
import threading
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, Protocol, TypeVar

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
from gputop.backends.smi_runner import SmiRunner, find_smi
from gputop.core.bounds import Bound
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, DeviceInfo, NodeInfo, Process, Snapshot
from gputop.host.processes import HostFacts, HostProcesses

PROCESSES = "processes"  # the attribute a consumer wants when it shows processes
REFRESH_S = 1.0  # how often the readings are re-read (back to back when the tool is slower)
MIN_GAP_S = 0.2  # rest between two rounds even when the tool is slower than REFRESH_S

Readings = dict[int, dict[str, Any]]  # each GPU's readings, by the tool's own key for it


@dataclass(frozen=True)
class ToolGpu:
    """One GPU as the tool's first answer names it: the key its later answers use, and what
    does not change."""

    key: int
    name: str | None
    bus_id: str | None
    attrs: Mapping[str, Any]


@dataclass(frozen=True)
class Static:
    """What open() learns once: the GPUs, the driver, each GPU's DeviceInfo and, where the
    first call also printed readings, those readings (they are then the first round)."""

    gpus: Sequence[ToolGpu]
    driver_version: str | None
    infos: Sequence[DeviceInfo]
    readings: Readings | None = None


@dataclass(frozen=True)
class Listing:
    """What a tool says of one process on one GPU; the host says the rest (see _row)."""

    name: str | None  # the tool's name for it, where the host has none
    gpu_memory_mib: float | None
    sm_pct: float | None = None


def _row(pid: int, facts: HostFacts, listing: Listing) -> Process:
    """Return the model's row of one listed process: the host's facts (user, command,
    container, job), the tool's figures."""
    return facts.process(pid, name=listing.name, gpu_memory_mib=listing.gpu_memory_mib,
                         sm_pct=listing.sm_pct)


class _Notes(Protocol):
    def lines(self) -> tuple[str, ...]: ...


class Listed(Protocol):
    """A process as a tool lists it: its PID at least."""

    @property
    def pid(self) -> int: ...


P = TypeVar("P", bound=Listed)
N = TypeVar("N", bound=_Notes)


class ToolBackend(Backend, Generic[P, N]):
    """Runs a vendor's tool on a worker thread; sample() never waits for it. ``P`` is a process
    as the tool lists it, ``N`` the record of what its answers leave unsaid."""

    tool: ClassVar[str]  # the executable's name on PATH, and how messages name it
    vendor: ClassVar[str]
    timeout_bound: ClassVar[Bound]  # the env setting of the per-call timeout, and its range
    default_timeout_s: ClassVar[float]
    metric_attrs: ClassVar[frozenset[str]]  # the attributes a round's readings give

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
        self._gpus: list[ToolGpu] = []
        self._metric: Readings = {}
        self._metric_at: float | None = None
        self._procs: dict[int, tuple[Process, ...]] = {}
        self._error: BaseException | None = None
        self._want_metric = True
        self._want_procs = CAP_PROCESSES in self.capabilities
        self.reads = 0  # rounds read by the worker (tests wait on it)
        self._notes = self.new_notes()

    # ------------------------------------------------------------------ what a vendor says
    @abstractmethod
    def new_notes(self) -> N:
        """Return the record of what the tool's answers leave unsaid (notes() says it)."""

    @abstractmethod
    def read_static(self, runner: SmiRunner) -> Static:
        """Run the call(s) read once; a BackendError here makes the tool unusable."""

    @abstractmethod
    def read_metric(self, runner: SmiRunner) -> Readings:
        """Run the call that gives the readings; return each GPU's, by its key."""

    def list_processes(self, runner: SmiRunner) -> Mapping[int, Sequence[P]]:
        """Run the call that lists processes; return each GPU's, by its key (none here)."""
        return {}

    def listing(self, key: int, listed: P) -> Listing:
        """Return what the tool says of one process it listed on the GPU of ``key``."""
        raise NotImplementedError(f"{self.tool} lists no processes")

    @abstractmethod
    def lost_reason(self, gpu: ToolGpu) -> str:
        """Say why a GPU is lost: the tool's last readings had none for it."""

    # ------------------------------------------------------------------ power limits
    # What sets the limit instead of this backend, where something does (AMD: the sysfs backend)
    limit_setter: ClassVar[str | None] = None

    def limit_refusal(self) -> str:
        """Say why not: the tool is run to read it only; no backend runs a tool's set command
        (no captured answer of one to test it against), and where another backend can set the
        limit, say which."""
        why = f"the {self.tool} backend sets no power limits: it runs {self.tool} only to read"
        return why if self.limit_setter is None else f"{why}; {self.limit_setter}"

    def limit_commands(self, limits: Mapping[int, float]) -> list[str]:
        """Return no command: this backend sets no limit, and nvidia-smi's would not apply."""
        return []

    # ------------------------------------------------------------------ lifecycle
    def timeout_from_env(self) -> float:
        """Return the env setting's per-call timeout, checked against its documented range."""
        return float(self.timeout_bound.from_env(os.environ, self.default_timeout_s))

    def open(self) -> None:
        executable = find_smi(self.tool, None)
        self.timeout_s = self.timeout_s if self.timeout_s is not None else self.timeout_from_env()
        self._runner = SmiRunner(self.tool, executable, self.timeout_s)
        try:
            static = self.read_static(self._runner)
        except BackendError as exc:
            self._runner.close()
            raise BackendUnavailable(f"{self.tool} is present but unusable: {exc}") from exc
        if not static.gpus:
            self._runner.close()
            raise BackendUnavailable(f"{self.tool} lists no GPUs")
        self._gpus = list(static.gpus)
        self._info = NodeInfo(hostname(), self.name, static.driver_version, None,
                              tuple(static.infos))
        # The first readings are taken here, so that the first sample (`gputop snapshot`) has
        # them; a failure is kept for the samples to report, not raised: the tool answered.
        # Either way this is the first round: the worker's next comes a refresh later, not
        # straight after (a tool that takes a second a call would run twice at every start).
        if static.readings is not None:
            self._store(static.readings, None, [])  # the first call's readings
        else:
            self._round()
        gap = max(MIN_GAP_S, self.refresh_s)
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, args=(gap,),
                                        name=f"gputop-{self.tool}", daemon=True)
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
            raise BackendError(f"{self.name} backend not open")
        return self._info

    def notes(self) -> tuple[str, ...]:
        with self._lock:
            return self._notes.lines()

    # ------------------------------------------------------------------ the worker
    def _round(self) -> None:
        """Read what the consumers want; store it, or the first failure. A failing readings
        call does not keep the process list from being read, nor the other way round."""
        assert self._runner is not None
        with self._lock:
            want_metric, want_procs = self._want_metric, self._want_procs
        metric: Readings | None = None
        procs: dict[int, tuple[Process, ...]] | None = None
        failures: list[BackendError] = []
        if want_metric:
            try:
                metric = self.read_metric(self._runner)
            except BackendError as exc:
                failures.append(exc)
        if want_procs and not self._stop.is_set():
            try:
                procs = self._read_processes(self._runner)
            except BackendError as exc:
                failures.append(exc)
        self._store(metric, procs, failures)

    def _store(self, metric: Readings | None, procs: dict[int, tuple[Process, ...]] | None,
               failures: Sequence[BaseException]) -> None:
        now = self.clock.monotonic()
        with self._lock:
            if metric is not None:
                self._metric, self._metric_at = dict(metric), now
            if procs is not None:
                self._procs = procs
            self._error = failures[0] if failures else None
            self.reads += 1

    def _read_processes(self, runner: SmiRunner) -> dict[int, tuple[Process, ...]]:
        """List the processes and attribute each through gputop.host (its user, command,
        container, job), by its GPU's PCI address."""
        listed = self.list_processes(runner)
        bus_of = {g.key: g.bus_id for g in self._gpus}
        out: dict[int, tuple[Process, ...]] = {}
        all_pids: list[int] = []
        for key, procs in listed.items():
            facts_by_pid = self.host.lookup_device(bus_of[key], [p.pid for p in procs])
            out[key] = tuple(_row(p.pid, facts_by_pid[p.pid], self.listing(key, p))
                             for p in procs)
            all_pids.extend(p.pid for p in procs)
        self.host.prune(all_pids)
        return out

    def _loop(self, gap: float) -> None:
        while not self._stop.wait(gap):
            started = self.clock.monotonic()
            self._round()
            gap = max(MIN_GAP_S, self.refresh_s - (self.clock.monotonic() - started))

    # ------------------------------------------------------------------ sampling (never blocks)
    def sample(self, devices: Sequence[int] | None = None, *,
               wants: Wants | None = EVERYTHING) -> Snapshot:
        info = self.info()
        now = self.clock.monotonic()
        with self._lock:
            # the worker's next round reads what this consumer wants, and no more
            self._want_metric = wants is None or bool(self.metric_attrs & set(wants))
            self._want_procs = (CAP_PROCESSES in self.capabilities
                                and (wants is None or PROCESSES in wants))
            metric, procs = self._metric, self._procs
            metric_at, error = self._metric_at, self._error
        age = round(max(0.0, now - metric_at), 3) if metric_at is not None else None
        chosen = range(len(self._gpus)) if devices is None else devices
        out = []
        for i in chosen:
            gpu = self._gpus[i]
            device = Device(index=i, name=gpu.name, vendor=self.vendor, pci_bus_id=gpu.bus_id,
                            data_age_s=age, **gpu.attrs, **metric.get(gpu.key, {}),
                            processes=procs.get(gpu.key, ()))
            out.append(self._status_of(device, gpu, metric, metric_at, error, age))
        return Snapshot(host=info.host, time=self.clock.wall(), backend=self.name,
                        devices=tuple(out), driver_version=info.driver_version)

    def _status_of(self, device: Device, gpu: ToolGpu, metric: Readings,
                   metric_at: float | None, error: BaseException | None,
                   age: float | None) -> Device:
        if error is not None:
            when = (f"; readings are {age:.0f} s old" if age is not None
                    else "; no reading yet")
            return replace(device, status="error",
                           status_reason=f"{self.tool}'s last read failed ({error}){when}")
        if metric_at is not None and gpu.key not in metric:
            return replace(device, status="lost", status_reason=self.lost_reason(gpu))
        return device
