"""The process table's group rows: one per job or per user (see gputop.analysis.groups).

The columns keep the process table's keys (and so its sort keys): GPU becomes the GPUs the group
holds, PID how many processes it has, JOB its label.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from gputop.analysis.groups import Group, group
from gputop.analysis.jobs import gpu_list
from gputop.core.formatting import NA, duration, host_mem, idle_text, mib, num
from gputop.core.model import Snapshot
from gputop.tui.widgets.keyed_table import Column

# GROUP takes the room left, beside USER: at 80 columns every figure still shows.
GROUP_COLUMNS: tuple[Column, ...] = (
    Column("gpu", "GPUS", 7, sort_key="G"),
    Column("pid", "PROCS", 5, right=True, sort_key="P"),
    Column("user", "USER", 10, sort_key="U"),
    Column("job", "GROUP", 0, sort_key="J"),
    Column("gpu_mem", "GPU MEM", 8, right=True, sort_key="M"),
    Column("sm", "SM%", 4, right=True, sort_key="S"),
    Column("cpu", "CPU%", 6, right=True, sort_key="C"),
    Column("host_mem", "HOST MEM", 8, right=True, sort_key="H"),
    Column("energy", "Wh", 7, right=True),
    Column("time", "TIME", 7, right=True, sort_key="T"),
    Column("idle", "IDLE", 6, right=True, sort_key="I"),  # shown while some process has some
)
MODE_NOTE = {"job": "grouped by job (b)", "user": "grouped by user (b)"}
# What the help adds under job grouping: which groups gputop guessed (gputop.analysis.groups.GUESS)
GUESS_NOTE = "; ≈ marks a group guessed from user and command"

# What the process table's keys do on group rows, by the keys `?` lists: the help describes the
# keys as they act in the mode the table is in (GPU, PID and JOB are GPUS, PROCS and GROUP here).
GROUP_KEY_HELP = {
    "G": "sort by the GPUs a group holds (GPUS; again: reverse)",
    "P": "sort by how many processes (PROCS; again: reverse)",
    "U": "sort by USER (again: reverse)",
    "J": "sort by the group's name (GROUP; again: reverse)",
    "M": "sort by summed GPU MEM (again: reverse)",
    "S": "sort by mean SM% (again: reverse)",
    "C": "sort by summed CPU% (again: reverse)",
    "H": "sort by summed HOST MEM (again: reverse)",
    "T": "sort by TIME since the oldest process started (again: reverse)",
    "I": "sort by IDLE, the time its processes held a GPU idle, summed (again: reverse)",
    "O": "sort by the groups' commands (again: reverse)",
    "/": "filter by group name, user, command or PID (esc clears)",
    "enter / d": "details are per process: b back to one row per process",
    "k": "send SIGTERM to every process of the selected group (asks first)",
    "K": "send SIGKILL to every process of the selected group (asks first)",
    "i": "send SIGINT to every process of the selected group (asks first)",
}


@dataclass(frozen=True)
class GroupRow:
    key: str
    gpu: int  # the group's first GPU (what `o` and the GPU selection compare with)
    group: Group
    cells: tuple[str, ...]
    styles: ClassVar[tuple[str | None, ...]] = ()  # no cell styled: the table's own colours


def energy_text(g: Group) -> str:
    """Wh since the job started; ``≥`` when the history holds only the end of it."""
    if g.energy_wh is None:
        return "-"
    return f"{'' if g.energy_complete else '≥'}{g.energy_wh:.1f}"


def _one_or_count(values: list[str], what: str) -> str:
    if not values:
        return NA
    return values[0] if len(values) == 1 else f"{len(values)} {what}"


def group_text(g: Group) -> str:
    """The group's name, and its command where the name is not already the command."""
    commands = g.commands
    if g.key.startswith("user:"):  # the USER column names it already
        return _one_or_count(commands, "commands")
    if g.outside or (len(commands) == 1 and commands[0] == g.label):
        return g.label
    return f"{g.label} · {_one_or_count(commands, 'commands')}"


def make_group_row(g: Group, now: float) -> GroupRow:
    started = g.started
    cells = (
        gpu_list(g.gpus),
        str(g.count),
        _one_or_count(g.users, "users"),
        group_text(g),
        mib(g.gpu_memory_mib),
        num(g.sm_pct),
        num(g.cpu_pct, ".1f"),
        host_mem(g.host_memory_mib),
        energy_text(g),
        duration(now - started if started is not None else None),
        idle_text(g.idle_s),
    )
    return GroupRow(g.key, g.gpus[0], g, cells)


def group_matches(row: GroupRow, needle: str) -> bool:
    """The `/` filter on a group: its label, a user, a command or a PID of its processes."""
    if not needle:
        return True
    n = needle.lower()
    g = row.group
    return (n in g.label.lower() or any(n in u.lower() for u in g.users)
            or any(n in c.lower() for c in g.commands) or any(n in str(p) for p in g.pids))


def _sort_value(row: GroupRow, column: str, now: float):
    g = row.group
    missing = float("-inf")
    if column == "gpu":
        return (row.gpu, len(g.gpus))
    if column == "pid":
        return g.count
    if column == "user":
        return ",".join(g.users).lower()
    if column == "job":
        return g.label.lower()
    if column == "command":
        return ",".join(g.commands).lower()
    if column == "time":
        return now - g.started if g.started is not None else missing
    value = {"gpu_mem": g.gpu_memory_mib, "sm": g.sm_pct, "cpu": g.cpu_pct,
             "host_mem": g.host_memory_mib, "idle": g.idle_s}.get(column)
    return missing if value is None else value


def build_group_rows(snapshot: Snapshot, mode: str, now: float | None = None, *,
                     energy=(), needle: str = "", only_gpu: int | None = None,
                     sort: str = "gpu", descending: bool = False) -> list[GroupRow]:
    now = snapshot.time if now is None else now
    devices = [d for d in snapshot.devices if only_gpu is None or d.index == only_gpu]
    rows = [make_group_row(g, now) for g in group(devices, mode, energy)]
    rows = [r for r in rows if group_matches(r, needle)]
    rows.sort(key=lambda r: (r.gpu, r.key))  # a stable tie-break, as for processes
    rows.sort(key=lambda r: _sort_value(r, sort, now), reverse=descending)
    return rows
