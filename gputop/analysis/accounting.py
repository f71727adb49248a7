"""Job accounting: what each job used of this node's GPUs, and what it held idle. A pure fold
over the samples, oldest first, driven by the idle ledger (gputop.analysis.waste), which judges
each interval once for both (docs/waste.md).

A job here is one *account*: a job (as the grouped process table names it: the scheduler's
job, pod or container, else the launch gputop infers, marked inferred) run by one user. The
exporter serves one series per account, so that ``sum by (user)`` and ``sum by (hpc_job)``
count every second once; reports add a job's accounts up.

Per interval (from one sample to the next, judged by the newer one), for every GPU or MIG
instance (a *unit*) an account's processes are on:

- GPU seconds: the interval times the unit's weight (1 for a GPU; a MIG instance counts as the
  share of its GPU's memory it was given). Two accounts sharing a GPU each held it.
- Energy: the GPU's energy over the interval, split between its processes by memory share.
- SM activity: the unit's (GPM's SM active, else utilization) times the GPU seconds, where
  measured; the mean is that over the measured GPU seconds.
- Idle: the GPU seconds and energy of the intervals the unit was held idle.

An account *ends* at the first sample none of its processes is in; its job ends when its last
account does (:meth:`JobLedger.drain_ended`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gputop.analysis.groups import GUESS, key_and_label
from gputop.analysis.hints import IDLE_MIN_MEMORY_MIB, activity_pct, idle_state
from gputop.core.formatting import duration
from gputop.core.model import Device, Process
from gputop.core.units import MIB_PER_GIB

# How long an ended account's running totals are kept, for the exporter's counters: long
# enough for any scrape interval and a day's increase(), short enough that a node running
# thousands of jobs keeps a bounded number of series. `gputop report` reads a range at steps
# half of it apart (gputop.report.prometheus.STEP_S), one of which finds each ended job's
# final figures. An account seen again after that starts from 0, which Prometheus's
# increase() takes as a counter reset.
OWNER_RETENTION_S = 86400.0


@dataclass
class Tally:
    """Seconds and the energy spent in them. ``energy_j`` sums the intervals whose energy was
    read; ``energy_unread_s`` is the time whose energy the device did not report."""

    seconds: float = 0.0
    energy_j: float = 0.0
    energy_unread_s: float = 0.0

    def add(self, dt: float, energy_j: float | None) -> None:
        self.seconds += dt
        if energy_j is None:
            self.energy_unread_s += dt
        else:
            self.energy_j += energy_j

    def merge(self, other: Tally) -> None:
        self.seconds += other.seconds
        self.energy_j += other.energy_j
        self.energy_unread_s += other.energy_unread_s

    @property
    def energy(self) -> float | None:
        """The energy; None where time was counted and none of its energy was read."""
        if self.seconds > 0 and self.energy_unread_s >= self.seconds:
            return None
        return self.energy_j


@dataclass(frozen=True, slots=True)
class Unit:
    """What one interval is judged on: a whole GPU, or one MIG instance of it."""

    name: str  # the GPU's (or MIG instance's) UUID, else "gpu3" / "gpu3/mig1.0"
    weight: float  # GPU seconds per second held: 1, or a MIG instance's share of memory
    activity: float | None  # SM activity, %; None where not measured
    idle: bool | None  # held idle (enough memory held, no activity); None: not judged
    processes: tuple[Process, ...]


def held_mib(processes: Iterable[Process]) -> float:
    """Return the memory ``processes`` hold between them, MiB (unknown counts as none)."""
    return sum(p.gpu_memory_mib or 0.0 for p in processes)


def units(dev: Device) -> list[Unit]:
    """Return the units of ``dev`` its processes are on: the GPU, or each MIG instance (judged
    alone, by its own GPM SM activity and its own processes)."""
    if not dev.mig_instances:
        if not dev.processes:
            return []
        activity = activity_pct(dev)
        return [Unit(dev.uuid or f"gpu{dev.index}", 1.0, activity,
                     _judged(activity, dev.processes), dev.processes)]
    out = []
    for inst in dev.mig_instances:
        if not inst.processes:
            continue
        activity = inst.saturation.sm_active_pct
        share = (inst.memory_total_mib / dev.memory_total_mib
                 if inst.memory_total_mib and dev.memory_total_mib else 1.0 / len(dev.mig_instances))
        name = inst.uuid or f"gpu{dev.index}/mig{inst.gpu_instance_id}.{inst.compute_instance_id}"
        out.append(Unit(name, min(share, 1.0), activity, _judged(activity, inst.processes),
                        inst.processes))
    return out


def _judged(activity: float | None, processes: tuple[Process, ...]) -> bool | None:
    if held_mib(processes) < IDLE_MIN_MEMORY_MIB:
        return False  # not held: a context alone is not what idle-allocated is about
    return idle_state(activity, processes)


def account_key(proc: Process) -> tuple[str, str]:
    """Return the account ``proc`` is charged to: (job key, user)."""
    return key_and_label("job", proc)[0], proc.user or "?"


@dataclass
class Account:
    """One job's (for one user) use of this node's GPUs since gputop first saw it."""

    key: str  # the job's key (groups.key_and_label)
    label: str  # what to call the job: "job 4242", "pod research/trainer-0", "python serve.py"
    inferred: bool  # the job is a launch gputop inferred from user and command
    user: str | None
    hpc_job: str | None  # the scheduler's job id, as the exporter's hpc_job label has it
    first_seen: float
    last_seen: float
    started: float | None = None  # its earliest process's start, where known
    gpus: set[str] = field(default_factory=set)
    used: Tally = field(default_factory=Tally)  # GPU seconds held, and their energy
    idle: Tally = field(default_factory=Tally)  # GPU seconds held idle, and their energy
    sm_busy_s: float = 0.0  # GPU seconds x SM activity / 100, over the measured ones
    sm_measured_s: float = 0.0
    memory_mib: float = 0.0  # held at the newest sample it is in
    peak_memory_mib: float = 0.0
    gpus_now: int = 0  # units held at the newest sample it is in
    peak_gpus: int = 0  # the most units held at once in one sample
    reported: bool = False  # its end was reported, and it has not come back since

    @property
    def sm_active_pct(self) -> float | None:
        """The mean SM activity over the GPU seconds that measured it; None where none did."""
        return 100.0 * self.sm_busy_s / self.sm_measured_s if self.sm_measured_s > 0 else None


@dataclass
class _Held:
    """What one account holds in one sample."""

    first: Process  # the first of its processes seen: what the account is named by
    units: set[str] = field(default_factory=set)
    mib: float = 0.0
    started: float | None = None


class JobLedger:
    """The accounts of one node; fed per sample by the idle ledger. An ended account is kept
    ``retention_s`` after it was last seen (a report over a recording keeps them all: inf)."""

    def __init__(self, retention_s: float = OWNER_RETENTION_S) -> None:
        self.retention_s = retention_s
        # when it began counting (its first sample): every running total started at 0 then or
        # later, so a newer value served for the same node means the counters started over
        self.since: float | None = None
        self.accounts: dict[tuple[str, str], Account] = {}
        # the accounts of the processes of this sample and of the one before (_account_of)
        self._seen: dict[tuple[Any, ...], tuple[str, str]] = {}
        self._named: dict[tuple[Any, ...], tuple[str, str]] = {}
        # per unit of the newest sample, the memory each account holds on it (for interval)
        self._on_unit: dict[str, dict[tuple[str, str], float]] = {}
        self._present: set[tuple[str, str]] = set()
        # the sampler's thread adds, a screen's drains: a deque's ends are safe across threads
        self._ended: deque[dict[str, Any]] = deque()

    def interval(self, unit: Unit, dt: float, energy_j: float | None, total_mib: float) -> None:
        """Charge one unit's interval to the accounts on it (as :meth:`see` found them in the
        same sample). ``energy_j``: the GPU's energy over it, split by memory share of
        ``total_mib`` (all the GPU's processes' memory)."""
        mine = self._on_unit.get(unit.name, {})
        gpu_s = dt * unit.weight
        for k, mib in mine.items():
            acct = self.accounts.get(k)
            if acct is None:
                continue  # not seen by see(): cannot happen within one sample
            share = None if energy_j is None else (
                energy_j * mib / total_mib if total_mib > 0 else energy_j / len(mine))
            acct.used.add(gpu_s, share)
            if unit.activity is not None:
                acct.sm_measured_s += gpu_s
                acct.sm_busy_s += gpu_s * unit.activity / 100.0
            if unit.idle:
                acct.idle.add(gpu_s, share)

    def see(self, now: float, held_units: Iterable[Unit]) -> None:
        """Note who holds what at ``now`` (the sample's ``units``), before its intervals are
        charged: accounts open (or go on, when a job's processes come back), peaks rise, and
        the jobs none of whose processes is left end."""
        if self.since is None:
            self.since = now
        held: dict[tuple[str, str], _Held] = {}
        self._named, self._seen = self._seen, {}
        self._on_unit = {}
        for unit in held_units:
            mine = self._on_unit[unit.name] = {}
            for p in unit.processes:
                k = self._account_of(p)
                mine[k] = mine.get(k, 0.0) + (p.gpu_memory_mib or 0.0)
                h = held.get(k)
                if h is None:
                    h = held[k] = _Held(p)
                h.units.add(unit.name)
                h.mib += p.gpu_memory_mib or 0.0
                if p.started is not None and (h.started is None or p.started < h.started):
                    h.started = p.started
        for k, h in held.items():
            acct = self.accounts.get(k)
            if acct is None:
                acct = self._open(k, h.first, now)
            acct.last_seen = now
            acct.reported = False
            if h.started is not None and (acct.started is None or h.started < acct.started):
                acct.started = h.started
            acct.gpus |= h.units
            acct.gpus_now = len(h.units)
            acct.peak_gpus = max(acct.peak_gpus, acct.gpus_now)
            acct.memory_mib = h.mib
            acct.peak_memory_mib = max(acct.peak_memory_mib, h.mib)
        gone = self._present - held.keys()
        self._present = set(held)
        self._end({k[0] for k in gone} - {k[0] for k in self._present})
        for k in [k for k, a in self.accounts.items()
                  if k not in self._present and now - a.last_seen > self.retention_s]:
            del self.accounts[k]

    def _account_of(self, p: Process) -> tuple[str, str]:
        """Return ``p``'s account, named once for as long as what names it stays the same:
        naming an inferred launch parses its command line, and a node has hundreds of
        processes every second."""
        who = (p.pid, p.started, p.user, p.name, p.command, p.job, p.container,
               p.outside_pid_namespace)
        k = self._seen.get(who) or self._named.get(who) or account_key(p)
        self._seen[who] = k
        return k

    def _open(self, k: tuple[str, str], p: Process, now: float) -> Account:
        key, label = key_and_label("job", p)
        acct = Account(key, label.removeprefix(GUESS), inferred=not key.startswith("job:"),
                       user=p.user, hpc_job=p.job.id if p.job else None, first_seen=now,
                       last_seen=now)
        self.accounts[k] = acct
        return acct

    def _end(self, jobs: set[str]) -> None:
        for job in sorted(jobs):
            mine = [a for k, a in self.accounts.items()
                    if k[0] == job and k not in self._present and not a.reported]
            for a in mine:
                a.reported = True
            if mine:
                self._ended.append(record(mine))

    def drain_ended(self) -> list[dict[str, Any]]:
        """Return the jobs that ended since the last call (their last process left), each as
        :func:`record` writes it, and forget them."""
        out = []
        while self._ended:
            out.append(self._ended.popleft())
        return out

    def active(self) -> Iterator[Account]:
        """Yield the accounts present at the newest sample."""
        return (a for k, a in self.accounts.items() if k in self._present)

    def records(self) -> list[dict[str, Any]]:
        """Return every job this ledger has, present or ended, as :func:`record` writes it, the
        most idle GPU time first."""
        by_job: dict[str, list[Account]] = {}
        for a in self.accounts.values():
            by_job.setdefault(a.key, []).append(a)
        return sorted((record(accts) for accts in by_job.values()),
                      key=lambda r: (-r["idle_gpu_s"], -r["gpu_s"], r["job"]))


def record(accounts: list[Account]) -> dict[str, Any]:
    """Return one job's figures (its accounts added up) as JSON: the end-of-job line, the
    agent's and ``snapshot --json``'s ``job_accounting``, what ``gputop report`` reads back."""
    first = accounts[0]
    users = sorted({a.user for a in accounts if a.user})
    used, idle = Tally(), Tally()
    busy = measured = 0.0
    gpus: set[str] = set()
    for a in accounts:
        used.merge(a.used)
        idle.merge(a.idle)
        busy += a.sm_busy_s
        measured += a.sm_measured_s
        gpus |= a.gpus
    started = [a.started for a in accounts if a.started is not None]
    energy, idle_energy = used.energy, idle.energy
    return {
        "job": first.label, "inferred": first.inferred, "hpc_job": first.hpc_job,
        "user": users[0] if len(users) == 1 else None, "users": users,
        "gpus": sorted(gpus),
        "first_seen": min(a.first_seen for a in accounts),
        "last_seen": max(a.last_seen for a in accounts),
        "started": min(started) if started else None,
        "gpu_s": round(used.seconds, 3), "idle_gpu_s": round(idle.seconds, 3),
        "energy_j": None if energy is None else round(energy, 3),
        "idle_energy_j": None if idle_energy is None else round(idle_energy, 3),
        "sm_active_pct": round(100.0 * busy / measured, 2) if measured > 0 else None,
        # each account's peak, added up: the job's own peak where it has one user
        "peak_memory_mib": round(sum(a.peak_memory_mib for a in accounts), 1),
    }


def end_line(rec: dict[str, Any]) -> str:
    """Return the end-of-job line a person reads: ``job 4242 (alice) ended after 2h18m: 8 GPUs,
    18.40 GPU-h, 3.10 idle (17%), 41.20 kWh, SM 63%, peak 612.0 GiB``. A figure not measured
    is N/A."""
    who = f" ({rec['user']})" if rec["user"] else ""
    gpu_h, idle_h = rec["gpu_s"] / 3600.0, rec["idle_gpu_s"] / 3600.0
    share = f" ({100.0 * idle_h / gpu_h:.0f}%)" if gpu_h > 0 else ""
    kwh = "N/A kWh" if rec["energy_j"] is None else f"{rec['energy_j'] / 3.6e6:.2f} kWh"
    sm = "N/A" if rec["sm_active_pct"] is None else f"{rec['sm_active_pct']:.0f}%"
    gpus = len(rec["gpus"])
    return (f"{rec['job']}{who} ended after {duration(rec['last_seen'] - rec['first_seen'])}: "
            f"{gpus} GPU{'s' if gpus != 1 else ''}, {gpu_h:.2f} GPU-h, {idle_h:.2f} idle{share}, "
            f"{kwh}, SM {sm}, peak {rec['peak_memory_mib'] / MIB_PER_GIB:.1f} GiB")
