"""Grouping GPU processes: by the job they belong to, or by user. No Textual here.

A job is what attribution found (Slurm job, pod, container: ``jobs.job_name``), else the ranks
of one launch, which share a user and a command once rank arguments are stripped (the same key
the straggler hint groups GPUs by: ``hints.job_key``). A process that runs on several GPUs is one
process: its GPU memory counts on each GPU, its CPU and host memory once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gputop.analysis.hints import job_key
from gputop.analysis.jobs import job_name
from gputop.core.model import Process

MODES = ("process", "job", "user")  # the order the grouping key cycles through
OUTSIDE = "outside"  # key of the processes outside gputop's PID namespace, never signalled
# Marks a group gputop inferred (same user and command, rank arguments aside) rather than one
# the node named (a Slurm job, a pod, a container): a guess, and it says so (#27).
GUESS = "≈ "


def next_mode(mode: str) -> str:
    return MODES[(MODES.index(mode) + 1) % len(MODES)] if mode in MODES else MODES[0]


@dataclass(frozen=True)
class Member:
    gpu: int
    process: Process


def _known_sum(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


@dataclass(frozen=True)
class Group:
    key: str
    label: str
    members: tuple[Member, ...]
    energy_wh: float | None = None  # the job's energy on the GPUs it holds whole (job_energy)
    energy_complete: bool = False  # since the job started (else since the history's start)

    @property
    def outside(self) -> bool:
        return self.key == OUTSIDE

    def _per_pid(self) -> list[Process]:
        seen: dict[int, Process] = {}
        for m in self.members:
            seen.setdefault(m.process.pid, m.process)
        return [seen[pid] for pid in sorted(seen)]

    @property
    def processes(self) -> list[Process]:
        """One entry per process (by PID, ascending), whatever number of GPUs it runs on."""
        return self._per_pid()

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._per_pid()]

    @property
    def count(self) -> int:
        return len(self.pids)

    @property
    def gpus(self) -> list[int]:
        return sorted({m.gpu for m in self.members})

    @property
    def users(self) -> list[str]:
        return sorted({m.process.user for m in self.members if m.process.user})

    @property
    def commands(self) -> list[str]:
        """The group's commands, rank arguments stripped (ranks of one launch: one command)."""
        out = set()
        for m in self.members:
            launch = job_key(None, m.process.command)
            if launch is not None:
                out.add(launch[1])
            elif m.process.name:
                out.add(m.process.name)
        return sorted(out)

    @property
    def gpu_memory_mib(self) -> float | None:
        return _known_sum(m.process.gpu_memory_mib for m in self.members)

    @property
    def sm_pct(self) -> float | None:
        known = [m.process.sm_pct for m in self.members if m.process.sm_pct is not None]
        return sum(known) / len(known) if known else None

    @property
    def cpu_pct(self) -> float | None:
        return _known_sum(p.cpu_pct for p in self._per_pid())

    @property
    def host_memory_mib(self) -> float | None:
        return _known_sum(p.host_memory_mib for p in self._per_pid())

    @property
    def started(self) -> float | None:
        known = [m.process.started for m in self.members if m.process.started is not None]
        return min(known) if known else None

    @property
    def idle_s(self) -> float | None:
        """Process-seconds its processes held a GPU idle (gputop.analysis.waste): two ranks
        idle for a minute make two minutes."""
        return _known_sum(p.idle_s for p in self._per_pid())


def key_and_label(mode: str, proc: Process) -> tuple[str, str]:
    """The group ``proc`` falls in under ``mode`` ("job" or "user"), and what to call it."""
    if proc.outside_pid_namespace:
        return OUTSIDE, "outside this container"
    if mode == "user":
        return f"user:{proc.user or ''}", proc.user or "?"
    name = job_name(proc)
    if name is not None:
        return f"job:{name}", name
    launch = job_key(proc.user, proc.command)
    if launch is not None:
        user, command = launch
        return f"launch:{user}\0{command}", GUESS + command
    return f"pid:{proc.pid}", proc.name or str(proc.pid)


def group(devices: Sequence, mode: str, energy: Sequence[dict] = ()) -> list[Group]:
    """The processes of ``devices`` in groups, in order of first appearance (GPU order).
    ``energy``: ``jobs.job_energy``'s entries, joined to job groups by job name."""
    if mode not in ("job", "user"):
        raise ValueError(f"no such grouping: {mode!r}")
    members: dict[str, list[Member]] = {}
    labels: dict[str, str] = {}
    for dev in devices:
        for proc in dev.processes:
            key, label = key_and_label(mode, proc)
            members.setdefault(key, []).append(Member(dev.index, proc))
            labels.setdefault(key, label)
    by_job = {e["job"]: e for e in energy} if mode == "job" else {}
    out = []
    for key, ms in members.items():
        e = by_job.get(key[len("job:"):]) if key.startswith("job:") else None
        out.append(Group(key, labels[key], tuple(ms),
                         energy_wh=e["energy_wh"] if e else None,
                         energy_complete=bool(e and e["complete"])))
    return out
