"""A node's headline figures (the nodes table's row), from a snapshot or a checked document.

The viewer computes these for every snapshot of every node; reading them off the checked JSON
document costs a fraction of building the model's dataclasses, which happens only when a view
needs the whole snapshot (a node opened, the users view, `--once --json`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gputop.core.model import Snapshot


@dataclass(frozen=True)
class NodeSummary:
    time: float  # the snapshot's own time (the remote's clock)
    gpus: int
    util_pct: float | None  # mean over devices that report it
    mem_used_mib: float | None  # sums over devices that report them; None when none does
    mem_total_mib: float | None
    power_w: float | None
    power_limit_w: float | None
    hints: int
    simulated: bool = False  # the node's agent reads the simulator, not a device
    # The ids of the batch jobs its processes belong to (None: not known, as over Prometheus),
    # so that a job's screen builds the snapshots of its nodes alone.
    jobs: frozenset[str] | None = None


def _sum(values: list[Any]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _summarize(time: float, devices: list[Any], get, hints: int, simulated: bool,
               jobs: frozenset[str]) -> NodeSummary:
    ok = [d for d in devices if get(d, "status") == "ok"]
    utils = [u for u in (get(d, "utilization_gpu_pct") for d in ok) if u is not None]
    return NodeSummary(
        time=time, gpus=len(devices),
        util_pct=sum(utils) / len(utils) if utils else None,
        mem_used_mib=_sum([get(d, "memory_used_mib") for d in ok]),
        mem_total_mib=_sum([get(d, "memory_total_mib") for d in ok]),
        power_w=_sum([get(d, "power_draw_w") for d in ok]),
        power_limit_w=_sum([get(d, "power_limit_w") for d in ok]),
        hints=hints,
        simulated=simulated,
        jobs=jobs,
    )


def summarize_snapshot(snap: Snapshot) -> NodeSummary:
    jobs = frozenset(p.job.id for d in snap.devices for p in d.processes if p.job is not None)
    return _summarize(snap.time, list(snap.devices), getattr, len(snap.hints),
                      snap.backend == "sim", jobs)


def summarize_document(doc: dict[str, Any]) -> NodeSummary:
    """From a document that ``protocol.clean_document`` has checked."""
    jobs = frozenset(p["job"]["id"] for d in doc["devices"] for p in d.get("processes") or ()
                     if p.get("job"))
    return _summarize(float(doc["time"]), doc["devices"],
                      lambda d, k: d.get(k, "ok" if k == "status" else None), len(doc["hints"]),
                      doc.get("backend") == "sim", jobs)
