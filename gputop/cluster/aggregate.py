"""Pure views over node statuses: the nodes table's rows and the cluster-wide users view.

No Textual here: the text output of `gputop cluster --once` and the TUI share these.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gputop.cluster import states
from gputop.cluster.node import NodeStatus


def _sum(values: Iterable[float | None]) -> float | None:
    """Sum of the reported values; None when no device reported one (N/A, never a made-up 0)."""
    total = None
    for v in values:
        if v is not None:
            total = v if total is None else total + v
    return total


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


@dataclass(frozen=True)
class NodeRow:
    host: str
    state: str
    mode: str
    gpus: int | None
    util_pct: float | None
    mem_used_mib: float | None
    mem_total_mib: float | None
    power_w: float | None
    power_limit_w: float | None
    hints: int | None
    age_s: float | None
    reason: str
    seq: int = 0

    @property
    def mem_pct(self) -> float | None:
        if self.mem_used_mib is None or not self.mem_total_mib:
            return None
        return 100.0 * self.mem_used_mib / self.mem_total_mib


def node_row(status: NodeStatus, now: float) -> NodeRow:
    s = status.summary
    if s is None:
        return NodeRow(status.host, status.state, status.mode, None, None, None, None, None, None,
                       None, None, status.reason, status.seq)
    return NodeRow(
        # an agent on the simulator says so in every row (#27: nothing marked it)
        host=status.host, state=status.state,
        # one word: `cluster --once` prints the table for scripts that split on spaces
        mode=f"{status.mode}/sim" if s.simulated else status.mode, gpus=s.gpus,
        util_pct=s.util_pct, mem_used_mib=s.mem_used_mib, mem_total_mib=s.mem_total_mib,
        power_w=s.power_w, power_limit_w=s.power_limit_w,
        # hints come from the agent's analyses (npu-smi's health too); nvidia-smi has none
        hints=None if status.mode == "nvidia-smi" else s.hints,
        age_s=status.age(now), reason=status.reason, seq=status.seq,
    )


# Sort keys for the nodes table. None sorts last whichever way.
SORT_KEYS = ("state", "host", "gpus", "util", "memory", "power", "hints", "age")


def sort_rows(rows: Sequence[NodeRow], key: str, reverse: bool = False) -> list[NodeRow]:
    def value(row: NodeRow) -> float | str | None:
        values: dict[str, float | str | None] = {
            "state": states.SEVERITY.get(row.state, 99), "host": row.host, "gpus": row.gpus,
            "util": row.util_pct, "memory": row.mem_pct, "power": row.power_w,
            "hints": row.hints, "age": row.age_s,
        }
        return values[key]

    known = [r for r in rows if value(r) is not None]
    unknown = [r for r in rows if value(r) is None]
    known.sort(key=lambda r: (value(r), r.host), reverse=reverse)
    return known + sorted(unknown, key=lambda r: r.host)


def filter_rows(rows: Sequence[NodeRow], text: str) -> list[NodeRow]:
    """Case-insensitive substring over host, state, mode and reason; ``state:ok`` is exact."""
    text = text.strip().lower()
    if not text:
        return list(rows)
    if text.startswith("state:"):
        want = text.removeprefix("state:").strip()
        return [r for r in rows if r.state == want]
    return [r for r in rows if text in r.host.lower() or text in r.state or text in r.mode or
            text in r.reason.lower()]


@dataclass
class UserRow:
    user: str
    gpus: int = 0  # (node, device) pairs where the user has at least one process
    memory_mib: float = 0.0
    processes: int = 0
    nodes: dict[str, list[int]] = field(default_factory=dict)  # host -> device indices

    @property
    def where(self) -> str:
        return ", ".join(f"{h}[{','.join(map(str, sorted(d)))}]" for h, d in
                         sorted(self.nodes.items()))


def users_view(statuses: Sequence[NodeStatus]) -> list[UserRow]:
    """Who holds how many GPUs and how much GPU memory, where; biggest holders first.

    Nodes without fresh data (not ok/stale) are left out: their processes may be long gone.
    """
    users: dict[str, UserRow] = {}
    for status in statuses:
        if status.snapshot is None or status.state not in (states.OK, states.STALE):
            continue
        for dev in status.snapshot.devices:
            held: set[str] = set()
            for proc in dev.processes:
                name = proc.user or "?"
                row = users.setdefault(name, UserRow(name))
                row.processes += 1
                if proc.gpu_memory_mib is not None:
                    row.memory_mib += proc.gpu_memory_mib
                if name not in held:
                    held.add(name)
                    row.gpus += 1
                    row.nodes.setdefault(status.host, []).append(dev.index)
    return sorted(users.values(), key=lambda u: (-u.gpus, -u.memory_mib, u.user))


def _weighted_util(rows: Sequence[NodeRow]) -> float | None:
    weighted = [(r.util_pct, r.gpus) for r in rows if r.util_pct is not None and r.gpus]
    if not weighted:
        return None
    return sum(u * g for u, g in weighted) / sum(g for _, g in weighted)


def totals(rows: Sequence[NodeRow]) -> dict[str, float | int | None]:
    """The cluster line under the table: nodes by state, GPUs, mean utilisation, memory, power."""
    by_state: dict[str, int] = {}
    for r in rows:
        by_state[r.state] = by_state.get(r.state, 0) + 1
    return {
        "nodes": len(rows), "ok": by_state.get(states.OK, 0),
        "gpus": _sum(r.gpus for r in rows),
        "util_pct": _weighted_util(rows),
        "mem_used_mib": _sum(r.mem_used_mib for r in rows),
        "mem_total_mib": _sum(r.mem_total_mib for r in rows),
        "power_w": _sum(r.power_w for r in rows),
    }
