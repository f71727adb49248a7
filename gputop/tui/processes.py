"""The process table: rows keyed by (GPU, PID), updated in place, sorted and filtered.

A DataTable invalidates every row's render cache on any cell update, so refreshing 32 rows each
second repaints the whole table. This widget keeps one cached line per row and repaints only the
rows whose text changed; the cursor follows its process and the scroll offset stays put.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from gputop.model import Process, Snapshot
from gputop.tui import fmt


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int  # 0: takes the rest
    sort_key: str  # the key that sorts by this column
    right: bool = False


COLUMNS: tuple[Column, ...] = (
    Column("gpu", "GPU", 4, "G", right=True),
    Column("pid", "PID", 7, "P", right=True),
    Column("user", "USER", 10, "U"),
    Column("gpu_mem", "GPU MEM", 8, "M", right=True),
    Column("sm", "SM%", 4, "S", right=True),
    Column("cpu", "CPU%", 6, "C", right=True),
    Column("host_mem", "HOST MEM", 8, "H", right=True),
    Column("time", "TIME", 10, "T", right=True),
    Column("command", "COMMAND", 0, "O"),
)
SORT_KEYS = {c.sort_key: c.key for c in COLUMNS}
COLUMN_BY_KEY = {c.key: c for c in COLUMNS}
# Numbers sort largest first by default, text A→Z.
DESCENDING_FIRST = {"gpu_mem", "sm", "cpu", "host_mem", "time"}


@dataclass(frozen=True)
class ProcRow:
    key: str
    gpu: int
    process: Process
    cells: tuple[str, ...]


def row_key(gpu: int, pid: int) -> str:
    return f"{gpu}:{pid}"


def make_row(gpu: int, proc: Process, now: float) -> ProcRow:
    running = now - proc.started if proc.started is not None else None
    cells = (
        str(gpu),
        str(proc.pid),
        proc.user or fmt.NA,
        fmt.mib(proc.gpu_memory_mib),
        fmt.num(proc.sm_pct),
        fmt.num(proc.cpu_pct, ".1f"),
        fmt.host_mem(proc.host_memory_mib),
        fmt.duration(running),
        proc.command or proc.name or fmt.NA,
    )
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
    if column == "command":
        return (p.command or p.name or "").lower()
    if column == "time":
        return now - p.started if p.started is not None else missing
    value = {"gpu_mem": p.gpu_memory_mib, "sm": p.sm_pct, "cpu": p.cpu_pct,
             "host_mem": p.host_memory_mib}[column]
    return missing if value is None else value


def matches(row: ProcRow, needle: str) -> bool:
    """The `/` filter: a case-insensitive substring of user, command/name or PID."""
    if not needle:
        return True
    n = needle.lower()
    p = row.process
    return (n in (p.user or "").lower() or n in (p.command or "").lower()
            or n in (p.name or "").lower() or n in str(p.pid))


def build_rows(snapshot: Snapshot, now: float | None = None, *, needle: str = "",
               only_gpu: int | None = None, sort: str = "gpu",
               descending: bool = False) -> list[ProcRow]:
    now = snapshot.time if now is None else now
    rows = []
    for dev in snapshot.devices:
        if only_gpu is not None and dev.index != only_gpu:
            continue
        for proc in dev.processes:
            row = make_row(dev.index, proc, now)
            if matches(row, needle):
                rows.append(row)
    # A stable tie-break (GPU, PID) keeps equal rows from swapping places between ticks.
    rows.sort(key=lambda r: (r.gpu, r.process.pid))
    rows.sort(key=lambda r: _sort_value(r, sort, now), reverse=descending)
    return rows


class ProcessTable(ScrollView, can_focus=True):
    """Keyboard: up/down/page/home/end move the cursor; enter opens the detail view."""

    BINDINGS = [
        Binding("up", "cursor(-1)", "up", show=False),
        Binding("down", "cursor(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home", "edge(0)", "first", show=False),
        Binding("end", "edge(1)", "last", show=False),
        Binding("enter", "open", "details", show=False),
    ]

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

    class Open(Message):
        def __init__(self, row: ProcRow) -> None:
            super().__init__()
            self.row = row

    sort_column: reactive[str] = reactive("gpu", init=False)
    sort_descending: reactive[bool] = reactive(False, init=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[ProcRow] = []
        self._index: dict[str, int] = {}
        self.cursor_key: str | None = None
        self.cursor_row = 0
        self.needle = ""
        self.only_gpu: int | None = None
        self._snapshot: Snapshot | None = None
        self._strips: dict[str, tuple[tuple[str, ...], bool, Strip]] = {}
        self._header: Strip | None = None
        self._widths: tuple[int, ...] = ()
        self._styles: dict[str, Style] = {}
        self.empty_text = "no GPU processes"

    # ------------------------------------------------------------------ data
    def update(self, snapshot: Snapshot, now: float | None = None) -> None:
        self._snapshot = snapshot
        self._now = snapshot.time if now is None else now
        self._apply(build_rows(snapshot, self._now, needle=self.needle, only_gpu=self.only_gpu,
                               sort=self.sort_column, descending=self.sort_descending))

    def _reapply(self) -> None:
        if self._snapshot is not None:
            self.update(self._snapshot, self._now)
        else:
            self._header = None
            self.refresh()

    def set_filter(self, needle: str) -> None:
        self.needle = needle
        self._reapply()

    def set_only_gpu(self, gpu: int | None) -> None:
        self.only_gpu = gpu
        self._reapply()

    def sort_by(self, column: str) -> None:
        """Sort by ``column``; the same column again flips the direction."""
        if column == self.sort_column:
            self.sort_descending = not self.sort_descending
        else:
            self.sort_column = column
            self.sort_descending = column in DESCENDING_FIRST
        self._header = None
        self._reapply()

    def _apply(self, rows: list[ProcRow]) -> None:
        old_rows = self.rows
        old_height = len(old_rows)
        old_cursor_row = self.cursor_row
        self.rows = rows
        self._index = {r.key: i for i, r in enumerate(rows)}
        # The cursor follows its process; a vanished process leaves it at the same place.
        if self.cursor_key in self._index:
            self.cursor_row = self._index[self.cursor_key]
        elif rows:
            self.cursor_row = max(0, min(self.cursor_row, len(rows) - 1))
            self.cursor_key = rows[self.cursor_row].key
        else:
            self.cursor_row, self.cursor_key = 0, None
        if len(rows) != old_height:
            self.virtual_size = Size(self.size.width, len(rows) + 1)
            self.refresh()
            return
        width, height = self.size
        top = int(self.scroll_y)
        regions = []
        whole: set[int] = set()
        if old_cursor_row != self.cursor_row:
            # The cursor highlight moved: repaint where it was and where it is.
            whole = {old_cursor_row, self.cursor_row}
        for i, (a, b) in enumerate(zip(old_rows, rows, strict=False)):
            y = i - top + 1
            if not 1 <= y < height:
                continue
            if i in whole or a.key != b.key:
                regions.append(Region(0, y, width, 1))
            elif a.cells != b.cells:
                # Only the cells that changed (usually CPU% and SM%) go to the terminal.
                x0, x1 = self._cells_span(a.cells, b.cells, width)
                regions.append(Region(x0, y, x1 - x0, 1))
        if regions:
            self.refresh(*regions)

    def _cells_span(self, a: tuple[str, ...], b: tuple[str, ...], width: int) -> tuple[int, int]:
        x = 0
        first = last = None
        for n, w in enumerate(self.column_widths(width)):
            if a[n] != b[n]:
                if first is None:
                    first = x
                last = min(width, x + w)
            x += w + 1
        return (first or 0, last if last is not None else width)

    @property
    def selected(self) -> ProcRow | None:
        if self.cursor_key is None:
            return None
        i = self._index.get(self.cursor_key)
        return self.rows[i] if i is not None else None

    def keys(self) -> list[str]:
        return [r.key for r in self.rows]

    # ------------------------------------------------------------------ cursor
    def move_cursor(self, row: int) -> None:
        if not self.rows:
            return
        old = self.cursor_row
        row = max(0, min(row, len(self.rows) - 1))
        self.cursor_row = row
        self.cursor_key = self.rows[row].key
        width = self.size.width
        top = int(self.scroll_y)
        visible = max(1, self.size.height - 1)
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + visible:
            self.scroll_to(y=row - visible + 1, animate=False)
        else:
            for i in (old, row):
                self.refresh(Region(0, i - top + 1, width, 1))

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor_row + direction * max(1, self.size.height - 2))

    def action_edge(self, end: int) -> None:
        self.move_cursor(len(self.rows) - 1 if end else 0)

    def action_open(self) -> None:
        row = self.selected
        if row is not None:
            self.post_message(self.Open(row))

    def on_click(self, event) -> None:
        y = event.y
        if y >= 1:
            self.move_cursor(int(self.scroll_y) + y - 1)
            self.focus()

    # ------------------------------------------------------------------ rendering
    def _style(self, cls: str) -> Style:
        style = self._styles.get(cls)
        if style is None:
            base = self.rich_style
            style = base if not cls else base + self.get_component_rich_style(cls, partial=True)
            self._styles[cls] = style
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._strips.clear()
        self._header = None
        self.refresh()

    def on_resize(self) -> None:
        self._strips.clear()
        self._header = None
        self._widths = ()
        self.virtual_size = Size(self.size.width, len(self.rows) + 1)

    def on_focus(self) -> None:
        self._strips.clear()
        self.refresh()

    on_blur = on_focus

    def column_widths(self, width: int) -> tuple[int, ...]:
        if self._widths and sum(self._widths) + len(self._widths) - 1 == width:
            return self._widths
        fixed = sum(c.width for c in COLUMNS if c.width) + len(COLUMNS) - 1
        rest = max(8, width - fixed)
        self._widths = tuple(c.width or rest for c in COLUMNS)
        return self._widths

    def _cells_strip(self, cells: Iterable[str], style: Style, width: int) -> Strip:
        parts = []
        for col, text, w in zip(COLUMNS, cells, self.column_widths(width), strict=False):
            parts.append(fmt.rfit(text, w) if col.right else fmt.fit(text, w))
        text = " ".join(parts)
        segments = [Segment(run, style) for run in fmt.ascii_runs(text)]
        if len(text) == width and fmt.one_cell_each(text):
            return Strip(segments, cell_length=width)
        return Strip(segments).adjust_cell_length(width, style)

    def _header_strip(self, width: int) -> Strip:
        if self._header is not None and self._header.cell_length == width:
            return self._header
        segments = []
        base = self._style("proctable--header")
        for n, (col, w) in enumerate(zip(COLUMNS, self.column_widths(width), strict=False)):
            if n:
                segments.append(Segment(" ", base))
            sorted_here = col.key == self.sort_column
            arrow = ("▼" if self.sort_descending else "▲") if sorted_here else ""
            title = col.title + arrow
            text = fmt.rfit(title, w) if col.right else fmt.fit(title, w)
            style = self._style("proctable--sorted") if sorted_here else base
            # Underline the column's sort key inside its title (the key is shown in `?` too).
            pos = text.upper().find(col.sort_key)
            if pos < 0 or len(title) > w:
                segments.append(Segment(text, style))
            else:
                key_style = style + self._style("proctable--key")
                segments += [Segment(text[:pos], style), Segment(text[pos], key_style),
                             Segment(text[pos + 1:], style)]
        self._header = Strip(segments).adjust_cell_length(width, base)
        return self._header

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return self._header_strip(width)
        i = int(self.scroll_y) + y - 1
        if i >= len(self.rows):
            if i == 0 and not self.rows:
                text = self.empty_text
                if self.needle:
                    text = f"no process matches the filter {self.needle!r}"
                style = self._style("proctable--empty")
                return Strip([Segment(" " + text, style)]).adjust_cell_length(width, style)
            return Strip.blank(width, self._style(""))
        row = self.rows[i]
        is_cursor = i == self.cursor_row
        cached = self._strips.get(row.key)
        if cached is not None and cached[0] == row.cells and cached[1] == is_cursor:
            return cached[2]
        style = self._style("proctable--cursor" if is_cursor else "")
        strip = self._cells_strip(row.cells, style, width)
        self._strips[row.key] = (row.cells, is_cursor, strip)
        if len(self._strips) > 4 * len(self.rows) + 64:  # forget processes long gone
            live = set(self._index)
            self._strips = {k: v for k, v in self._strips.items() if k in live}
        return strip

