"""The report's rows: the records of every node merged into one row per job and one per user,
with the figures a person reads (docs/waste.md, "Job accounting").

A job is one across nodes when a scheduler or an orchestrator named it: a Slurm job, a pod, a
container, merged by their label and scheduler job id. A job gputop *inferred* from user and
command stays one per node: the same command line on two nodes is not known to be one job. A
user's row adds up every record of that user.

Figures added up over records: GPU seconds, idle GPU seconds, energy (a record whose energy was
not read adds nothing; the sum is N/A only where none was read), peak memory (each record's
peak, added up: an upper bound where the peaks were not at the same time). Mean SM activity is
weighted by each record's GPU seconds, over the records that measured it. A figure no record
reported is None (N/A), never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

J_PER_KWH = 3.6e6
S_PER_H = 3600.0


@dataclass(frozen=True)
class Column:
    """One figure of a row: its key (CSV header, JSON key, ``--sort`` name), its title in the
    text table, how it is shown, and which way ``--sort`` orders it."""

    key: str
    title: str
    kind: str  # text, count, hours, pct, kwh, money, time, mib
    descending: bool  # --sort puts the biggest first (figures); else the smallest (names, times)


_JOB = Column("job", "JOB", "text", False)
_USER = Column("user", "USER", "text", False)
_NODES = Column("nodes", "NODES", "count", True)
_GPUS = Column("gpus", "GPUS", "count", True)
_FIGURES = (
    Column("gpu_h", "GPU-H", "hours", True),
    Column("idle_gpu_h", "IDLE GPU-H", "hours", True),
    Column("idle_pct", "IDLE%", "pct", True),
    Column("kwh", "KWH", "kwh", True),
    Column("idle_kwh", "IDLE KWH", "kwh", True),
    Column("cost", "COST", "money", True),
    Column("sm_pct", "SM%", "pct", True),
)
JOB_COLUMNS = (_JOB, _USER, _NODES, _GPUS, Column("start", "START", "time", False),
               Column("end", "END", "time", False), *_FIGURES,
               Column("peak_mem_mib", "PEAK MEM", "mib", True))
USER_COLUMNS = (_USER, Column("jobs", "JOBS", "count", True), _NODES, _GPUS, *_FIGURES)
# every name --sort takes: a column only one table has orders that table, the other keeps its own
SORT_KEYS = tuple(dict.fromkeys(c.key for c in (*JOB_COLUMNS, *USER_COLUMNS)))


def columns(table: Sequence[Column], priced: bool) -> list[Column]:
    """Return ``table``'s columns, the cost only where a price was given."""
    return [c for c in table if priced or c.key != "cost"]


def job_key(rec: dict[str, Any]) -> tuple[Any, ...]:
    """Return what one job is across nodes: its label and scheduler id, or for an inferred one
    also its node."""
    if rec.get("inferred"):
        return "inferred", rec["job"], tuple(sorted(rec["nodes"]))
    return "job", rec["job"], rec.get("hpc_job")


def user_of(rec: dict[str, Any]) -> str:
    """Return the user a record is charged to; "?" where unknown (as the idle ledger names it)."""
    if rec.get("user"):
        return str(rec["user"])
    users = rec.get("users") or []
    return ",".join(users) if users else "?"


def job_rows(records: Iterable[dict[str, Any]], price: float | None = None) -> list[dict[str, Any]]:
    """Return one row per job (:func:`job_key`), the top idle holders first."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for rec in records:
        groups.setdefault(job_key(rec), []).append(rec)
    out = []
    for recs in groups.values():
        users = sorted({u for r in recs for u in (r.get("users") or [])}
                       | {r["user"] for r in recs if r.get("user")})
        starts = [r["started"] if r.get("started") is not None else r["first_seen"] for r in recs]
        peaks = [r["peak_memory_mib"] for r in recs if r.get("peak_memory_mib") is not None]
        row = {"job": recs[0]["job"], "inferred": bool(recs[0].get("inferred")),
               "hpc_job": recs[0].get("hpc_job"),
               "user": users[0] if len(users) == 1 else (",".join(users) if users else None),
               **_totals(recs, price),
               "start": min(starts), "end": max(r["last_seen"] for r in recs),
               "first_seen": min(r["first_seen"] for r in recs),
               "peak_mem_mib": sum(peaks) if peaks else None}
        out.append(row)
    return sort_rows(out, None)


def user_rows(records: Iterable[dict[str, Any]],
              price: float | None = None) -> list[dict[str, Any]]:
    """Return one row per user (:func:`user_of`), the top idle holders first."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        groups.setdefault(user_of(rec), []).append(rec)
    out = [{"user": user, "jobs": len({job_key(r) for r in recs}), **_totals(recs, price)}
           for user, recs in groups.items()]
    return sort_rows(out, None)


def _totals(recs: list[dict[str, Any]], price: float | None) -> dict[str, Any]:
    """The figures rows of either kind add up over their records."""
    gpu_s = sum(r["gpu_s"] for r in recs)
    idle_s = sum(r["idle_gpu_s"] for r in recs)
    kwh = _kwh(r.get("energy_j") for r in recs)
    measured = [(r["sm_active_pct"], r["gpu_s"]) for r in recs
                if r.get("sm_active_pct") is not None and r["gpu_s"] > 0]
    weight = sum(w for _, w in measured)
    nodes = sorted({n for r in recs for n in r["nodes"]})
    return {
        "hosts": nodes, "nodes": len(nodes),
        "gpus": _gpus(recs),
        "gpu_h": gpu_s / S_PER_H, "idle_gpu_h": idle_s / S_PER_H,
        "idle_pct": 100.0 * idle_s / gpu_s if gpu_s > 0 else None,
        "kwh": kwh, "idle_kwh": _kwh(r.get("idle_energy_j") for r in recs),
        "cost": None if kwh is None or price is None else kwh * price,
        "sm_pct": sum(p * w for p, w in measured) / weight if weight > 0 else None,
    }


def _gpus(recs: list[dict[str, Any]]) -> int:
    """Return how many GPUs ``recs`` held: the distinct GPUs a recording names (a GPU is its
    node's: simulated nodes, and clones of one image, repeat UUIDs); Prometheus names none,
    and gives each record's most held at once (``gpu_count``), added up."""
    named = {(n, g) for r in recs for n in r["nodes"] for g in r.get("gpus") or ()}
    return len(named) + sum(r.get("gpu_count", 0) for r in recs if not r.get("gpus"))


def _kwh(joules: Iterable[float | None]) -> float | None:
    read = [j for j in joules if j is not None]
    return sum(read) / J_PER_KWH if read else None


def _name(row: dict[str, Any]) -> str:
    return str(row.get("job", row.get("user")))


def sort_rows(rows: list[dict[str, Any]], key: str | None) -> list[dict[str, Any]]:
    """Return ``rows`` ordered by the column ``key`` (its own direction, N/A last), or by
    default (None, or a column these rows do not have) the top idle holders first: idle
    GPU-hours, then GPU-hours, most first."""
    by_key = {c.key: c for c in (*JOB_COLUMNS, *USER_COLUMNS)}
    column = by_key.get(key) if key is not None else None
    if column is None or not rows or column.key not in rows[0]:
        return sorted(rows, key=lambda r: (-r["idle_gpu_h"], -r["gpu_h"], _name(r)))
    sign = -1.0 if column.descending else 1.0
    value: Callable[[dict[str, Any]], Any]
    if column.kind == "text":
        def value(r: dict[str, Any]) -> Any:
            return (r[column.key] is None, str(r[column.key] or "").lower(), _name(r))
    else:
        def value(r: dict[str, Any]) -> Any:
            v = r[column.key]
            return (v is None, 0.0 if v is None else sign * v, _name(r))
    return sorted(rows, key=value)
