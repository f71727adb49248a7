"""The process table: rows keyed by (GPU, PID), updated in place, sorted and filtered.

A DataTable invalidates every row's render cache on any cell update, so refreshing 32 rows each
second repaints the whole table. This is a KeyedTable (one cached line per row, only the changed
cells repainted); the cursor follows its process and the scroll offset stays put.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding
from textual.message import Message

from gputop.analysis.jobs import job_label
from gputop.config.columns import PROCESS_TABLE
from gputop.core.formatting import GONE, NA, duration, host_mem, idle_text, mib, num
from gputop.core.model import Process, Snapshot
from gputop.core.units import MIB_PER_GIB
from gputop.tui.text.command import program_first
from gputop.tui.widgets.keyed_table import Column, KeyedTable

if TYPE_CHECKING:
    from gputop.history import History

COLUMNS: tuple[Column, ...] = tuple(
    Column(c.key, c.title, c.width, right=c.right, sort_key=c.sort_key,
           middle=c.key == "command", shorten=program_first if c.key == "command" else None)
    for c in PROCESS_TABLE)
# Shown after GPU only while some GPU has MIG on: the process's GPU instance / compute instance,
# as nvidia-smi's process table pairs them ("2/0"); "-" for a process on a whole GPU.
MIG_COLUMN = Column("mig", "GI/CI", 5, right=True)
MIG_COLUMNS = COLUMNS[:1] + (MIG_COLUMN,) + COLUMNS[1:]
SORT_KEYS = {c.sort_key: c.key for c in COLUMNS}
# Below this width the table leaves out CPU% and HOST MEM (the process view shows both), IDLE
# (the idle-allocated hint names the idle holder and how long), and under MIG SM% too (GI/CI
# takes its room; a MIG process has no SM% of its own), so that at 80 columns the command keeps
# 30 characters or more.
NARROW_WIDTH = 100
NARROW_HIDDEN = frozenset({"cpu", "host_mem", "idle"})
NARROW_MIG_HIDDEN = NARROW_HIDDEN | {"sm"}
# Columns that hold nothing on some nodes (no job attributed, no per-process SM% under MIG or
# on a backend without it, no host facts for processes in other PID namespaces): left out
# while no process has a value, so the command gets their room.
OPTIONAL: dict[str, Callable[[Process], object]] = {
    "job": job_label,
    "sm": lambda p: p.sm_pct,
    "cpu": lambda p: p.cpu_pct,
    "host_mem": lambda p: p.host_memory_mib,
    "idle": lambda p: p.idle_s,  # no process held its GPU idle: nothing to say
}


def empty_columns(snapshot: Snapshot) -> frozenset[str]:
    """The OPTIONAL columns no process of ``snapshot`` has a value for."""
    procs = [p for d in snapshot.devices for p in d.processes]
    return frozenset(k for k, get in OPTIONAL.items() if not any(get(p) for p in procs))
# Numbers sort largest first by default, text A→Z.
DESCENDING_FIRST = {"gpu_mem", "sm", "cpu", "host_mem", "time", "idle"}
# A group row is named by its GROUP column: a settings file's `columns` never hides it.
GROUP_NAME = "job"


@dataclass(frozen=True)
class ProcRow:
    key: str
    gpu: int
    process: Process
    cells: tuple[str, ...]
    styles: ClassVar[tuple[str | None, ...]] = ()  # no cell styled: the table's own colours


def row_key(gpu: int, pid: int) -> str:
    return f"{gpu}:{pid}"


def mig_cell(proc: Process) -> str:
    if proc.gpu_instance_id is None:
        return "-"
    ci = "-" if proc.compute_instance_id is None else proc.compute_instance_id
    return f"{proc.gpu_instance_id}/{ci}"


def with_mig(cells: tuple[str, ...], proc: Process) -> tuple[str, ...]:
    """``cells`` in MIG_COLUMNS' order: the process's instance after its GPU."""
    return cells[:1] + (mig_cell(proc),) + cells[1:]


def command_cell(proc: Process) -> str:
    """The COMMAND cell: the whole line (the column shortens it: COLUMNS), else the name; GONE
    for a process that has exited."""
    if proc.gone:
        return GONE
    return proc.command or proc.name or NA


def make_row(gpu: int, proc: Process, now: float, mig: bool = False) -> ProcRow:
    running = now - proc.started if proc.started is not None else None
    cells: tuple[str, ...] = (
        str(gpu),
        str(proc.pid),
        proc.user or NA,
        job_label(proc) or "-",
        mib(proc.gpu_memory_mib),
        num(proc.sm_pct),
        num(proc.cpu_pct, ".1f"),
        host_mem(proc.host_memory_mib),
        duration(running),
        idle_text(proc.idle_s),
        command_cell(proc),
    )
    if mig:
        cells = with_mig(cells, proc)
    return ProcRow(row_key(gpu, proc.pid), gpu, proc, cells)


def _sort_value(row: ProcRow, column: str, now: float):
    p = row.process
    missing = float("-inf")
    if column == "gpu":
        return (row.gpu, p.pid)
    if column == "pid":
        return p.pid
    if column == "user":
        return (p.user or "").lower()
    if column == "job":
        return (job_label(p) or "").lower()
    if column == "command":  # as shown: by program name, not by its folder
        return (program_first(p.command) if p.command else p.name or "").lower()
    if column == "time":
        return now - p.started if p.started is not None else missing
    value = {"gpu_mem": p.gpu_memory_mib, "sm": p.sm_pct, "cpu": p.cpu_pct,
             "host_mem": p.host_memory_mib, "idle": p.idle_s}[column]
    return missing if value is None else value


FILTER_MATCHES = "user, job, command or PID"  # what matches() looks in, as help and box say


def matches(row: ProcRow, needle: str) -> bool:
    """The `/` filter: a case-insensitive substring of user, job, command/name (GONE as the
    cell shows it) or PID."""
    if not needle:
        return True
    n = needle.lower()
    p = row.process
    return (n in (p.user or "").lower() or n in (p.command or "").lower()
            or (p.gone and n in GONE)
            or n in (p.name or "").lower() or n in str(p.pid)
            or n in (job_label(p) or "").lower())


def outside_row(gpu: int, procs: list[Process], mig: bool = False) -> ProcRow:
    """One row for a GPU's processes outside gputop's PID namespace: how many, how much memory."""
    known = [p.gpu_memory_mib for p in procs if p.gpu_memory_mib is not None]
    memory = sum(known) if known else None
    n = len(procs)
    where = "process" if n == 1 else "processes"
    summary = Process(pid=min(p.pid for p in procs), gpu_memory_mib=memory,
                      outside_pid_namespace=True,
                      command=f"{n} {where} outside this container: " + (
                          f"{memory / MIB_PER_GIB:.1f} GiB" if memory is not None else NA))
    cells: tuple[str, ...] = (str(gpu), "-", NA, "-", mib(memory), NA, NA, NA, NA, NA,
                              summary.command or "")
    if mig:
        cells = with_mig(cells, summary)
    return ProcRow(f"{gpu}:outside", gpu, summary, cells)


def has_mig(snapshot: Snapshot) -> bool:
    """True while some GPU is split into MIG instances: the table shows each process's."""
    return any(dev.mig_instances for dev in snapshot.devices)


def build_rows(snapshot: Snapshot, now: float | None = None, *, needle: str = "",
               only_gpu: int | None = None, sort: str = "gpu",
               descending: bool = False) -> list[ProcRow]:
    now = snapshot.time if now is None else now
    mig = has_mig(snapshot)
    rows = []
    for dev in snapshot.devices:
        if only_gpu is not None and dev.index != only_gpu:
            continue
        outside = [p for p in dev.processes if p.outside_pid_namespace]
        for proc in dev.processes:
            if proc.outside_pid_namespace:
                continue
            row = make_row(dev.index, proc, now, mig)
            if matches(row, needle):
                rows.append(row)
        if outside:
            row = outside_row(dev.index, outside, mig)
            if matches(row, needle):
                rows.append(row)
    # A stable tie-break (GPU, PID) keeps equal rows from swapping places between ticks.
    rows.sort(key=lambda r: (r.gpu, r.process.pid))
    rows.sort(key=lambda r: _sort_value(r, sort, now), reverse=descending)
    # Processes that have exited go last in either direction: they hold nothing on the host, and
    # at the top of the table they would push the live ones off the screen (stable: kept in order).
    rows.sort(key=lambda r: r.process.gone)
    return rows


class ProcessTable(KeyedTable, inherit_component_classes=False):
    """Keyboard: up/down/page/home/end move the cursor; enter opens the detail view. Its look
    is its own ``proctable--`` classes alone."""

    BINDINGS = [Binding("enter", "open", "details", show=False)]
    COMPONENT_PREFIX = "proctable"
    COMPONENT_CLASSES = {"proctable--header", "proctable--sorted", "proctable--cursor",
                         "proctable--key", "proctable--empty"}
    DEFAULT_CSS = """
    ProcessTable { height: 1fr; background: $surface; }
    ProcessTable > .proctable--header { background: $panel; color: $foreground; text-style: bold; }
    ProcessTable > .proctable--sorted { background: $panel; color: $accent; text-style: bold; }
    ProcessTable > .proctable--key { background: $panel; color: $accent; text-style: bold underline; }
    ProcessTable > .proctable--cursor { background: $primary 30%; text-style: bold; }
    ProcessTable:focus > .proctable--cursor { background: $primary 50%; }
    ProcessTable > .proctable--empty { color: $muted; }
    """
    DOUBLE_CLICK_OPENS = False

    class Open(Message):
        def __init__(self, row: ProcRow) -> None:
            super().__init__()
            self.row = row

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(COLUMNS, id=id, empty_text="no GPU processes")
        self.sort_column: str = "gpu"
        self.needle = ""
        self.only_gpu: int | None = None
        self.grouping = "process"  # or "job", "user": see gputop.analysis.groups.MODES
        self.history: History | None = None  # the sampler's (per-job energy)
        self.hidden_by_settings: frozenset[str] = frozenset()  # see show_only
        self._empty: frozenset[str] = frozenset()  # OPTIONAL columns with no value at all
        self._narrow = False  # narrower than NARROW_WIDTH: CPU% and HOST MEM left out
        self._snapshot: Snapshot | None = None

    @property
    def sort_descending(self) -> bool:
        return self.sort_reverse

    # ------------------------------------------------------------------ data
    def update(self, snapshot: Snapshot, now: float | None = None) -> None:
        self._snapshot = snapshot
        self._now = snapshot.time if now is None else now
        empty = empty_columns(snapshot)
        if self.grouping != "process":
            if empty != self._empty:
                self._empty = empty
                self._hide_for_mode()
            self.set_rows(self._group_rows(snapshot))
            return
        columns = MIG_COLUMNS if has_mig(snapshot) else COLUMNS
        # the width as it is now, not only as the last Resize said: under load a loaded CI saw
        # the table drawn at 80 columns with the wide set (HOST MEM in the command's room)
        narrow = self.size.width < NARROW_WIDTH if self.size.width else self._narrow
        if columns != self.columns or empty != self._empty or narrow != self._narrow:
            self.columns = columns
            self._empty = empty
            self._narrow = narrow
            self._hide_for_mode()
        self.set_rows(build_rows(snapshot, self._now, needle=self.needle,
                                 only_gpu=self.only_gpu, sort=self.sort_column,
                                 descending=self.sort_reverse))

    def _group_rows(self, snapshot: Snapshot) -> list:
        from gputop.tui.widgets.grouped import build_group_rows

        energy: Sequence[dict] = ()
        if self.grouping == "job" and self.history is not None:
            from gputop.analysis.jobs import job_energy

            energy = job_energy(self.history)
        return build_group_rows(snapshot, self.grouping, self._now, energy=energy,
                                needle=self.needle, only_gpu=self.only_gpu,
                                sort=self.sort_column, descending=self.sort_reverse)

    def set_grouping(self, mode: str) -> None:
        """One row per process, or per group ("job", "user"); the columns change with it."""
        from gputop.tui.widgets.grouped import GROUP_COLUMNS

        self.grouping = mode
        mig = self._snapshot is not None and has_mig(self._snapshot)
        self.columns = (MIG_COLUMNS if mig else COLUMNS) if mode == "process" else GROUP_COLUMNS
        self._hide_for_mode()  # and the widths, header and rows drawn anew
        self.cursor_key = None  # rows of another kind: the cursor starts at the top
        self.cursor_row = 0
        self.rows = []
        self.scroll_to(y=0, animate=False)
        self._reapply()
        self._header = None
        self.refresh()

    def _reapply(self) -> None:
        if self._snapshot is not None:
            self.update(self._snapshot, self._now)
        else:
            self._header = None
            self.refresh()

    def show_only(self, keys) -> None:
        """Show only the columns named (the settings file's `columns`); group rows hide the
        same ones, but never their name."""
        self.hidden_by_settings = frozenset(c.key for c in COLUMNS if c.key not in keys)
        self._hide_for_mode()

    def _hide_for_mode(self) -> None:
        """Hide what the settings hide, what holds no information here (empty_columns), and
        CPU% and HOST MEM on a narrow screen. Group rows never hide their name."""
        if self.grouping != "process":
            # IDLE, like on process rows, only while some process has been held idle
            self.hide_columns((self.hidden_by_settings - {GROUP_NAME}) | (self._empty & {"idle"}))
            return
        hidden = set(self.hidden_by_settings) | self._empty
        if self._narrow:
            hidden |= NARROW_MIG_HIDDEN if self.columns == MIG_COLUMNS else NARROW_HIDDEN
        self.hide_columns(hidden)

    def on_resize(self) -> None:
        super().on_resize()
        narrow = self.size.width < NARROW_WIDTH
        if narrow != self._narrow:
            self._narrow = narrow
            self._hide_for_mode()

    def sort_as(self, column: str, descending: bool | None = None) -> None:
        """Sort by ``column``; ``descending`` None: the column's own first direction."""
        self.set_sort(column, column in DESCENDING_FIRST if descending is None else descending)
        self._reapply()

    def set_filter(self, needle: str) -> None:
        self.needle = needle
        self._reapply()

    def set_only_gpu(self, gpu: int | None) -> None:
        self.only_gpu = gpu
        self._reapply()

    def sort_by(self, column: str) -> None:
        """Sort by ``column``; the same column again flips the direction."""
        self.sort_as(column, not self.sort_reverse if column == self.sort_column else None)

    def action_open(self) -> None:
        row = self.selected
        if row is not None:
            self.post_message(self.Open(row))

    def empty_message(self) -> str:
        if self.needle and self.grouping != "process":
            return f"no group matches the filter {self.needle!r}"
        if self.needle:
            return f"no process matches the filter {self.needle!r}"
        return self.empty_text
