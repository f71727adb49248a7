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
from dataclasses import fields, replace
from typing import Any

from gputop.analysis.accounting import OWNER_RETENTION_S, JobLedger, Tally, Unit, held_mib, units
from gputop.analysis.hints import IDLE_UTIL_PCT
from gputop.core import budget
from gputop.core.model import Device, MigInstance, Process, Snapshot

# The longest interval between two samples that counts: beyond it (a pause, a stalled backend,
# a gap in a recording) only this much is counted. Ten times the slowest interval an agent is
# usually run at (1-5 s), and well under the hint's five minutes.
IDLE_MAX_GAP_S = 60.0

# What the ledger reads of each sample (gputop.core.budget), on every one: who holds what
# (processes, MIG instances), the activity idle is judged by, and the energy (else power). A
# recording made for `gputop report` asks the device for this much.
READS = budget.wants("processes", "mig_instances", "utilization_gpu_pct", "saturation",
                     "energy_j", "power_draw_w")

ProcessKey = tuple[int, float | None]

# A process rebuilt with its idle figures, its other fields read at once by C and passed by
# position (dataclasses.replace, generic, took 80% of a tick's cost; keywords a third of what
# was left). The idle figures are Process's last two fields.
_PROCESS_FIELDS = tuple(f.name for f in fields(Process))
assert _PROCESS_FIELDS[-2:] == ("idle_s", "idle_energy_j")
_PROCESS_REST = operator.attrgetter(*_PROCESS_FIELDS[:-2])
# Likewise a device with new processes: its fields read at once, by C, and by position.
_DEVICE_FIELDS = tuple(f.name for f in fields(Device))
_DEVICE_ALL = operator.attrgetter(*_DEVICE_FIELDS)
_DEVICE_PROCESSES = _DEVICE_FIELDS.index("processes")
_DEVICE_MIG = _DEVICE_FIELDS.index("mig_instances")


def process_key(proc: Process) -> ProcessKey:
    return proc.pid, proc.started


class WasteLedger:
    """The running tallies; ``add`` one snapshot at a time, oldest first. Per process here;
    per job and user in ``accounts`` (gputop.analysis.accounting), charged in the same pass;
    an ended account kept ``retention_s``."""

    def __init__(self, retention_s: float = OWNER_RETENTION_S) -> None:
        self.processes: dict[ProcessKey, Tally] = {}
        self.accounts = JobLedger(retention_s)
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
        judged = [(dev, units(dev)) for dev in snap.devices]  # once: both ledgers read them
        self.accounts.see(snap.time, [u for _, mine in judged for u in mine])
        if prev is None:
            return
        elapsed = snap.time - prev
        dt = min(elapsed, IDLE_MAX_GAP_S)
        for dev, mine in judged:
            if mine:
                self._device(dev, mine, dt, elapsed, energy_before.get(dev.index))

    def _device(self, dev: Device, mine: list[Unit], dt: float, elapsed: float,
                energy_before: float | None) -> None:
        energy = _interval_energy(dev, dt, elapsed, energy_before)
        # under MIG the whole GPU's energy is split over all its instances' processes
        total = held_mib(p for u in mine for p in u.processes)
        for unit in mine:
            self.accounts.interval(unit, dt, energy, total)
            if unit.idle is None:
                self.unknown_s[dev.index] = self.unknown_s.get(dev.index, 0.0) + dt
            elif unit.idle:
                for p in unit.processes:
                    share = (p.gpu_memory_mib or 0.0) / total
                    self.processes.setdefault(process_key(p), Tally()).add(
                        dt, None if energy is None else energy * share)
        # (an idle GPU whose processes the driver does not list, e.g. from inside a container,
        # has nobody to charge: its held memory is below the floor here and it is not counted)

    def of(self, proc: Process) -> Tally | None:
        """The process's idle tally; None where it was never held idle."""
        return self.processes.get(process_key(proc))

    def annotate(self, snap: Snapshot) -> Snapshot:
        """Add ``snap`` and return it with each process's ``idle_s`` and ``idle_energy_j``."""
        self.add(snap)
        return replace(snap, devices=tuple(self._annotated(d) for d in snap.devices))

    def _annotated(self, dev: Device) -> Device:
        if not dev.processes and not dev.mig_instances:
            return dev
        values = list(_DEVICE_ALL(dev))
        values[_DEVICE_PROCESSES] = self._procs(dev.processes)
        if dev.mig_instances:
            values[_DEVICE_MIG] = tuple(self._instance(i) for i in dev.mig_instances)
        return Device(*values)

    def _instance(self, inst: MigInstance) -> MigInstance:
        return replace(inst, processes=self._procs(inst.processes))

    def _procs(self, processes: tuple[Process, ...]) -> tuple[Process, ...]:
        out = []
        for p in processes:
            t = self.processes.get(process_key(p))
            idle = (t.seconds, t.energy) if t else (0.0, 0.0)
            out.append(Process(*_PROCESS_REST(p) + idle))
        return tuple(out)

    def summary(self) -> dict[str, Any]:
        """Per job and per user, the idle GPU seconds and energy, most idle first; and per GPU
        the seconds not judged (no activity reading)."""
        jobs: dict[str, dict[str, Any]] = {}
        users: dict[str, Tally] = {}
        for a in self.accounts.accounts.values():
            row = jobs.setdefault(a.key, {"job": a.label, "inferred": a.inferred, "user": a.user,
                                          "tally": Tally()})
            if row["user"] != a.user:
                row["user"] = None  # a job of several users names none
            row["tally"].merge(a.idle)
            users.setdefault(a.user or "?", Tally()).merge(a.idle)

        def figures(t: Tally) -> dict[str, Any]:
            e = t.energy
            return {"idle_s": round(t.seconds, 3),
                    "idle_energy_j": None if e is None else round(e, 3)}

        job_rows = [{**{k: v for k, v in r.items() if k != "tally"}, **figures(r["tally"])}
                    for r in jobs.values()]
        user_rows = [{"user": u, **figures(t)} for u, t in users.items()]
        return {"max_gap_s": IDLE_MAX_GAP_S, "idle_util_pct": IDLE_UTIL_PCT,
                "jobs": sorted(job_rows, key=lambda r: -r["idle_s"]),
                "users": sorted(user_rows, key=lambda r: -r["idle_s"]),
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
