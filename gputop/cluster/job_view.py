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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gputop.analysis.hints import BUSY_UTIL_PCT, slow_clock_why, straggler_detail
from gputop.core.model import Device, Snapshot


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
