"""Idle-allocated accounting: how long each process, job and user held a GPU (or a MIG instance)
idle, and the energy the GPU spent meanwhile. A pure fold over the samples, oldest first; no
device, no screen (docs/waste.md).

An interval (from one sample to the next) is judged by the newer sample, whose readings cover
it. A GPU is *held idle* in it when its processes hold >= ``hints.IDLE_MIN_MEMORY_MIB`` MiB and
its SM activity is <= ``hints.IDLE_UTIL_PCT`` (the ``idle-allocated`` hint's figures, so the
hint and the ledger agree): GPM's SM active where the device measures it, else
utilization.gpu; a process that reports its own SM share above the threshold makes it busy. A
MIG instance is judged alone, by its own GPM SM activity, with its own processes. A device that
reports neither figure is not judged: the interval counts as unknown, never as idle.

The interval counts at most ``IDLE_MAX_GAP_S`` seconds, so a paused dashboard or a gap in
sampling does not count hours of idle it did not see. Idle energy is the GPU's energy counter's
delta over the interval (else its power x the interval), scaled down as the interval is, split
between the GPU's processes by their share of its memory: a shared GPU's power is not measured
per process, and under MIG the whole GPU's energy is split over all its instances' processes.

Processes are keyed by PID and start time, so a reused PID is a new process (a process whose
start time is unknown is keyed by its PID alone). Jobs are named as the grouped process table
names them (``groups.key_and_label``): the scheduler's job, pod or container, else the launch
gputop infers from user and command, marked inferred.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from gputop.analysis.groups import GUESS, key_and_label
from gputop.analysis.hints import IDLE_MIN_MEMORY_MIB, IDLE_UTIL_PCT, activity_pct, idle_state
from gputop.core.model import Device, MigInstance, Process, Snapshot

# The longest interval between two samples that counts: beyond it (a pause, a stalled backend,
# a gap in a recording) only this much is counted. Ten times the slowest interval an agent is
# usually run at (1-5 s), and well under the hint's five minutes.
IDLE_MAX_GAP_S = 60.0
# How long a (job, user) pair's running total is kept after it was last counted, for the
# exporter's counters: long enough for any scrape interval and a day's rate(), short enough that
# a node running thousands of jobs keeps a bounded number of series. A pair seen again after
# that starts from 0, which Prometheus's increase() takes as a counter reset.
OWNER_RETENTION_S = 86400.0

ProcessKey = tuple[int, float | None]

# A process rebuilt with its idle figures, its other fields read at once by C
# (dataclasses.replace, generic, took 80% of a tick's cost).
_PROCESS_NAMES = tuple(f.name for f in fields(Process) if f.name not in ("idle_s", "idle_energy_j"))
_PROCESS_REST = operator.attrgetter(*_PROCESS_NAMES)
# Likewise a device with new processes: its fields read at once, by C.
_DEVICE_FIELDS = tuple(f.name for f in fields(Device))
_DEVICE_ALL = operator.attrgetter(*_DEVICE_FIELDS)


@dataclass
class Tally:
    """Idle seconds and the energy spent in them. ``energy_j`` sums the intervals whose energy
    was read; ``energy_unread_s`` is the idle time whose energy the device did not report."""

    idle_s: float = 0.0
    energy_j: float = 0.0
    energy_unread_s: float = 0.0

    def add(self, dt: float, energy_j: float | None) -> None:
        self.idle_s += dt
        if energy_j is None:
            self.energy_unread_s += dt
        else:
            self.energy_j += energy_j

    @property
    def idle_energy_j(self) -> float | None:
        """The idle energy; None where idle time was counted and none of its energy was read."""
        if self.idle_s > 0 and self.energy_unread_s >= self.idle_s:
            return None
        return self.energy_j


@dataclass
class Group:
    """A job's or a user's tally, with what to call it."""

    label: str
    inferred: bool = False
    user: str | None = None
    hpc_job: str | None = None  # the scheduler's job id, as the exporter's hpc_job label has it
    tally: Tally = field(default_factory=Tally)
    last: float = 0.0  # when it was last counted idle


def _held(processes: Iterable[Process]) -> float:
    return sum(p.gpu_memory_mib or 0.0 for p in processes)


def process_key(proc: Process) -> ProcessKey:
    return proc.pid, proc.started


class WasteLedger:
    """The running tallies; ``add`` one snapshot at a time, oldest first."""

    def __init__(self) -> None:
        self.processes: dict[ProcessKey, Tally] = {}
        self.jobs: dict[str, Group] = {}
        self.users: dict[str, Group] = {}
        # Per (job key, user): one running total each, so that summing by user or by job over
        # them counts every idle second once (the exporter's counters).
        self.owners: dict[tuple[str, str], Group] = {}
        self.unknown_s: dict[int, float] = {}  # per GPU: intervals not judged
        self._time: float | None = None
        self._energy: dict[int, float | None] = {}

    def add(self, snap: Snapshot) -> None:
        """Take one sample in; a repeated or older one (a replay seeking back) is not counted."""
        prev = self._time
        if prev is not None and snap.time <= prev:
            if snap.time < prev:  # seeking back: start the interval over from here
                self._time = snap.time
                self._energy = {d.index: d.energy_j for d in snap.devices}
            return
        self._time = snap.time
        energy_before = self._energy
        self._energy = {d.index: d.energy_j for d in snap.devices}
        if prev is None:
            return
        elapsed = snap.time - prev
        dt = min(elapsed, IDLE_MAX_GAP_S)
        for dev in snap.devices:
            self._device(dev, dt, elapsed, energy_before.get(dev.index))
        for key in [k for k, g in self.owners.items() if snap.time - g.last > OWNER_RETENTION_S]:
            del self.owners[key]

    def _device(self, dev: Device, dt: float, elapsed: float, energy_before: float | None) -> None:
        energy = _interval_energy(dev, dt, elapsed, energy_before)
        if dev.mig_instances:
            everyone = [p for inst in dev.mig_instances for p in inst.processes]
            judged = [(inst.saturation.sm_active_pct, inst.processes)
                      for inst in dev.mig_instances]
        else:
            everyone = list(dev.processes)
            judged = [(activity_pct(dev), dev.processes)]
        total = _held(everyone)
        for activity, processes in judged:
            if _held(processes) < IDLE_MIN_MEMORY_MIB:
                continue
            idle = idle_state(activity, processes)
            if idle is None:
                self.unknown_s[dev.index] = self.unknown_s.get(dev.index, 0.0) + dt
            elif idle:
                for p in processes:
                    share = (p.gpu_memory_mib or 0.0) / total
                    self._count(p, dt, None if energy is None else energy * share)
        # (an idle GPU whose processes the driver does not list, e.g. from inside a container,
        # has nobody to charge: its held memory is below the floor here and it is not counted)

    def _count(self, proc: Process, dt: float, energy_j: float | None) -> None:
        self.processes.setdefault(process_key(proc), Tally()).add(dt, energy_j)
        key, label = key_and_label("job", proc)
        job = self.jobs.setdefault(key, Group(label.removeprefix(GUESS),
                                              inferred=not key.startswith("job:"),
                                              user=proc.user))
        if job.user != proc.user:
            job.user = None  # a job of several users names none
        job.tally.add(dt, energy_j)
        user = proc.user or "?"
        self.users.setdefault(user, Group(user)).tally.add(dt, energy_j)
        owner = self.owners.setdefault((key, user), Group(
            job.label, job.inferred, proc.user,
            hpc_job=proc.job.id if proc.job else None))
        owner.tally.add(dt, energy_j)
        owner.last = self._time or 0.0

    def of(self, proc: Process) -> Tally | None:
        """The process's tally; None where it was never held idle."""
        return self.processes.get(process_key(proc))

    def annotate(self, snap: Snapshot) -> Snapshot:
        """Add ``snap`` and return it with each process's ``idle_s`` and ``idle_energy_j``."""
        self.add(snap)
        return replace(snap, devices=tuple(self._annotated(d) for d in snap.devices))

    def _annotated(self, dev: Device) -> Device:
        if not dev.processes and not dev.mig_instances:
            return dev
        kwargs = dict(zip(_DEVICE_FIELDS, _DEVICE_ALL(dev), strict=True))
        kwargs["processes"] = self._procs(dev.processes)
        if dev.mig_instances:
            kwargs["mig_instances"] = tuple(self._instance(i) for i in dev.mig_instances)
        return Device(**kwargs)

    def _instance(self, inst: MigInstance) -> MigInstance:
        return replace(inst, processes=self._procs(inst.processes))

    def _procs(self, processes: tuple[Process, ...]) -> tuple[Process, ...]:
        out = []
        for p in processes:
            t = self.processes.get(process_key(p))
            out.append(Process(**dict(zip(_PROCESS_NAMES, _PROCESS_REST(p), strict=True)),
                               idle_s=t.idle_s if t else 0.0,
                               idle_energy_j=t.idle_energy_j if t else 0.0))
        return tuple(out)

    def summary(self) -> dict[str, Any]:
        """Per job and per user, the idle seconds and energy, most idle first; and per GPU the
        seconds not judged (no activity reading)."""
        def rows(groups: dict[str, Group], job: bool) -> list[dict[str, Any]]:
            out = []
            for g in groups.values():
                row: dict[str, Any] = {"job" if job else "user": g.label}
                if job:
                    row["inferred"] = g.inferred
                    row["user"] = g.user
                row["idle_s"] = round(g.tally.idle_s, 3)
                e = g.tally.idle_energy_j
                row["idle_energy_j"] = None if e is None else round(e, 3)
                out.append(row)
            return sorted(out, key=lambda r: -r["idle_s"])
        return {"max_gap_s": IDLE_MAX_GAP_S, "idle_util_pct": IDLE_UTIL_PCT,
                "jobs": rows(self.jobs, True), "users": rows(self.users, False),
                "unknown_s": {str(k): round(v, 3) for k, v in sorted(self.unknown_s.items())}}


def _interval_energy(dev: Device, dt: float, elapsed: float,
                     before: float | None) -> float | None:
    """The GPU's energy over the counted part ``dt`` of an interval of ``elapsed`` seconds:
    the counter's delta scaled by dt/elapsed, else power x dt; None where neither is read."""
    if dev.energy_j is not None and before is not None and dev.energy_j >= before and elapsed > 0:
        return (dev.energy_j - before) * dt / elapsed
    if dev.power_draw_w is not None:
        return dev.power_draw_w * dt
    return None
