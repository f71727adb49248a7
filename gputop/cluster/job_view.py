"""One job's GPUs on all its nodes side by side, and the job's straggler among them.

``gputop cluster --slurm JOBID`` (and a job picked in the cluster view) compares the GPUs of one
job across nodes as a node's ``straggler`` hint compares them within a node, by the same
judgment (``gputop.analysis.hints.straggler_detail``: SM clock, utilization, power) and in its
words. A node whose every GPU of the job deviates from the GPUs of the job's other nodes is
flagged as the node (its cooling, its power, its network card: not one GPU's fault); otherwise
each GPU that deviates from all the job's others is. Pure: figures in, findings out; the latest
reading of each GPU, as the cluster view holds them (no history over nodes).
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from gputop.analysis.hints import BUSY_UTIL_PCT, slow_clock_why, straggler_detail
from gputop.cluster.node import NodeStatus
from gputop.cluster.slurm import GpuGrant, devices_by_gres
from gputop.core.formatting import num
from gputop.core.model import Device, Snapshot
from gputop.core.visible import visible


def job_devices(snapshot: Snapshot, job_id: str, grant: GpuGrant | None = None) -> frozenset[int]:
    """The indices of the GPUs of ``job_id`` on the node of ``snapshot``: those Slurm gave it
    (``grant``, a ``slurm.GpuGrant``), also those it runs nothing on yet or any more; else, or
    where Slurm's numbering and the node's GPUs disagree (a process of the job on a GPU the
    grant does not name), those running a process of the job (its processes' attribution)."""
    running = frozenset(d.index for d in snapshot.devices
                        if any(p.job is not None and p.job.id == job_id for p in d.processes))
    given = devices_by_gres(snapshot.devices, grant) if grant is not None else None
    return given if given is not None and running <= given else running


def only_jobs(snapshot: Snapshot, job_ids: Collection[str],
              grants: Mapping[str, GpuGrant] | None = None) -> Snapshot:
    """The snapshot with only the devices of ``job_ids`` (see ``job_devices``; ``grants``: job
    id -> what Slurm gave it on this node)."""
    grants = grants or {}
    keep: set[int] = set()
    for job in job_ids:
        keep |= job_devices(snapshot, job, grants.get(job))
    return replace(snapshot, devices=tuple(d for d in snapshot.devices if d.index in keep))


@dataclass(frozen=True)
class JobGpu:
    """One GPU of the job: where it is and its latest readings (None: not reported)."""

    node: str
    device: Device

    @property
    def index(self) -> int:
        return self.device.index

    @property
    def busy(self) -> bool:
        d = self.device
        return ((d.utilization_gpu_pct or 0) >= BUSY_UTIL_PCT
                and "gpu_idle" not in (d.clock_event_reasons or ()))

    @property
    def clock(self) -> float | None:
        """The SM clock as a fraction of its max while busy (an idle GPU's clock drops by
        design and says nothing of its speed)."""
        d = self.device
        if not (d.clock_sm_mhz and d.clock_sm_max_mhz and self.busy):
            return None
        return d.clock_sm_mhz / d.clock_sm_max_mhz

    @property
    def power(self) -> float | None:
        """The power draw (W) while busy: a waiting GPU draws little by design."""
        return self.device.power_draw_w if self.busy else None


@dataclass(frozen=True)
class Straggler:
    """The job's slow GPU (``index``) or slow node (``index`` None), and why."""

    node: str
    index: int | None
    reason: str


def job_gpus(snapshots: Mapping[str, Snapshot | None]) -> list[JobGpu]:
    """The job's GPUs, node by node in the order given, by index within a node (the snapshots
    already hold only the job's GPUs); a lost GPU is left out, as from a node's own hint."""
    out = []
    for node, snap in snapshots.items():
        if snap is None:
            continue
        out += [JobGpu(node, d) for d in sorted(snap.devices, key=lambda d: d.index)
                if d.status == "ok" and not d.mig_instances]
    return out


def _detail(me: Sequence[JobGpu], peers: Sequence[JobGpu]) -> str | None:
    """How the GPUs ``me`` (one GPU, or a node's) deviate from ``peers``, or None."""
    clocks = [g.clock for g in me if g.clock is not None]
    utils = [g.device.utilization_gpu_pct for g in me
             if g.device.utilization_gpu_pct is not None]
    powers = [g.power for g in me if g.power is not None]
    return straggler_detail(
        statistics.median(clocks) if clocks else None, [g.clock for g in peers],
        statistics.mean(utils) if utils else None,
        [g.device.utilization_gpu_pct for g in peers],
        lambda: slow_clock_why([g.device for g in me]),
        power=statistics.mean(powers) if powers else None, peer_power=[g.power for g in peers])


def stragglers(gpus: Sequence[JobGpu]) -> list[Straggler]:
    """The job's stragglers: each node whose every GPU deviates from the other nodes' GPUs
    (two or more of them: a node of one GPU is that GPU), then each other GPU that deviates
    from all the job's others."""
    if len(gpus) < 2:
        return []
    nodes: dict[str, list[JobGpu]] = {}
    for g in gpus:
        nodes.setdefault(g.node, []).append(g)
    out: list[Straggler] = []
    slow_nodes: set[str] = set()
    if len(nodes) >= 2:
        for node, mine in nodes.items():
            others = [g for g in gpus if g.node != node]
            if len(mine) < 2 or any(_detail([g], others) is None for g in mine):
                continue
            detail = _detail(mine, others)
            if detail is not None:
                slow_nodes.add(node)
                out.append(Straggler(node, None, f"node {node} is the slow one of the "
                                                 f"{len(nodes)} nodes of its job: {detail}"))
    for g in gpus:
        if g.node in slow_nodes:
            continue
        detail = _detail([g], [p for p in gpus if p is not g])
        if detail is not None:
            out.append(Straggler(g.node, g.index, f"GPU {g.index} on {g.node} is the slow one "
                                                  f"of the {len(gpus)} GPUs of its job: {detail}"))
    return out


@dataclass(frozen=True)
class JobReport:
    """One job across its nodes: its GPUs node by node and its stragglers."""

    job: str
    gpus: tuple[JobGpu, ...]
    stragglers: tuple[Straggler, ...]

    @property
    def nodes(self) -> list[str]:
        return list(dict.fromkeys(g.node for g in self.gpus))

    def flag(self, gpu: JobGpu) -> Straggler | None:
        """The straggler finding that names ``gpu`` (itself, or its node), if any."""
        for s in self.stragglers:
            if s.node == gpu.node and s.index in (None, gpu.index):
                return s
        return None


def report(job: str, snapshots: Mapping[str, Snapshot | None]) -> JobReport:
    """The job's GPUs on the nodes of ``snapshots`` (each holding only the job's GPUs) and its
    stragglers among them."""
    gpus = job_gpus(snapshots)
    return JobReport(job, tuple(gpus), tuple(stragglers(gpus)))


def report_document(r: JobReport) -> dict:
    """The job as ``--once --json`` prints it: its GPUs grouped by node, each flagged with the
    straggler finding that names it (null: none), and the findings."""
    nodes: dict[str, list[dict]] = {}
    for g in r.gpus:
        d, flag = g.device, r.flag(g)
        nodes.setdefault(g.node, []).append({
            "index": d.index, "name": d.name, "utilization_gpu_pct": d.utilization_gpu_pct,
            "clock_sm_mhz": d.clock_sm_mhz, "clock_sm_max_mhz": d.clock_sm_max_mhz,
            "power_draw_w": d.power_draw_w, "temperature_c": d.temperature_c,
            "memory_used_mib": d.memory_used_mib, "memory_total_mib": d.memory_total_mib,
            "straggler": None if flag is None else flag.reason})
    return {"id": r.job, "nodes": [{"host": h, "gpus": gpus} for h, gpus in nodes.items()],
            "stragglers": [{"node": s.node, "index": s.index, "reason": s.reason}
                           for s in r.stragglers]}


def render_report(r: JobReport) -> str:
    """The job as the ``--once`` text shows it: one line per GPU, grouped by node, a ``<`` on
    each straggler's line, then each finding. Host names and job ids are shown through
    ``gputop.core.visible``, never obeyed by the terminal."""
    width = max([4, *(len(visible(h)) for h in r.nodes)])
    out = [f"job {visible(r.job)}: {len(r.gpus)} GPUs on {len(r.nodes)} nodes",
           f"{'NODE':<{width}}  {'GPU':>3} {'UTIL':>5} {'SM CLOCK (MHz)':>15} {'POWER (W)':>9} "
           f"{'TEMP':>5} {'MEMORY (MiB)':>17}"]
    for g in r.gpus:
        d = g.device
        clock = f"{num(d.clock_sm_mhz)} / {num(d.clock_sm_max_mhz)}"
        mem = f"{num(d.memory_used_mib)} / {num(d.memory_total_mib)}"
        out.append(f"{visible(g.node):<{width}}  {d.index:>3} "
                   f"{num(d.utilization_gpu_pct, '.0f', '%'):>5} {clock:>15} "
                   f"{num(d.power_draw_w):>9} {num(d.temperature_c, '.0f', 'C'):>5} {mem:>17}"
                   + ("  <" if r.flag(g) is not None else ""))
    out += [f"straggler: {visible(s.reason)}" for s in r.stragglers] or ["no straggler"]
    return "\n".join(out) + "\n"


def report_from(job: str, statuses: Iterable[NodeStatus],
                grants: Mapping[str, Mapping[str, GpuGrant]] | None = None) -> JobReport:
    """The job across the nodes of ``statuses`` (their whole snapshots): on each, the GPUs
    Slurm gave it (``grants``: node -> job id -> grant) or else those running its processes.
    A node whose summary names its jobs and not this one, and that Slurm gave it nothing on,
    is passed over unbuilt: at 1000 nodes, building every node's snapshot each refresh was
    nine tenths of the screen's cost."""
    grants = grants or {}
    found = {}
    for s in statuses:
        summary = s.summary
        if (summary is not None and summary.jobs is not None and job not in summary.jobs
                and job not in grants.get(s.host, {})):
            continue
        snapshot = s.snapshot
        if snapshot is not None:
            found[s.host] = only_jobs(snapshot, {job}, grants.get(s.host))
    return report(job, found)


def job_on(device: Device) -> str | None:
    """The job a GPU runs: the first of its processes attributed to one (Slurm job, pod,
    container), the job a user picks on a node's screen."""
    for p in device.processes:
        if p.job is not None:
            return p.job.id
    return None
