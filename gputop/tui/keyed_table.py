"""A table whose rows are keyed (by host, by user) and repaint one line at a time.

Textual's DataTable re-renders every visible cell through Rich after any `update_cell`; with 64
nodes changing every second that alone costs more than the whole viewer may. Here each row is
cached as a Strip, keyed by its cells, and only rows whose cells changed are rebuilt and
repainted. Cells are plain strings put into Segments: nothing in them is ever read as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int  # 0: takes the rest
    right: bool = False
    sort_key: str | None = None  # the key that sorts by this column (underlined in the title)


@dataclass(frozen=True)
class Row:
    key: str
    cells: tuple[str, ...]
    styles: tuple[str | None, ...] = ()  # per cell: a component class suffix ("bad") or None


def fit(text: str, width: int, right: bool = False) -> str:
    if width <= 0:
        return ""
    if cell_len(text) > width:
        return set_cell_size(text[: width * 2], width - 1) + "…"
    pad = width - cell_len(text)
    return " " * pad + text if right else text + " " * pad


class KeyedTable(ScrollView, can_focus=True):
    BINDINGS = [
        Binding("up", "cursor(-1)", "up", show=False),
        Binding("down", "cursor(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home", "edge(0)", "first", show=False),
        Binding("end", "edge(1)", "last", show=False),
        Binding("enter", "open", "open", show=False),
    ]
    COMPONENT_CLASSES = {"keyedtable--header", "keyedtable--sorted", "keyedtable--key",
                         "keyedtable--cursor", "keyedtable--empty", "keyedtable--ok",
                         "keyedtable--bad", "keyedtable--warn", "keyedtable--muted",
                         "keyedtable--stale"}
    DEFAULT_CSS = """
    KeyedTable { height: 1fr; background: $surface; }
    KeyedTable > .keyedtable--header { background: $panel; color: $foreground; text-style: bold; }
    KeyedTable > .keyedtable--sorted { background: $panel; color: $accent; text-style: bold; }
    KeyedTable > .keyedtable--key { text-style: bold underline; }
    KeyedTable > .keyedtable--cursor { background: $primary 30%; text-style: bold; }
    KeyedTable:focus > .keyedtable--cursor { background: $primary 50%; }
    KeyedTable > .keyedtable--empty { color: $muted; }
    KeyedTable > .keyedtable--ok { color: $gauge-low; }
    KeyedTable > .keyedtable--bad { color: $error; text-style: bold; }
    KeyedTable > .keyedtable--warn { color: $warning; text-style: bold; }
    KeyedTable > .keyedtable--muted { color: $muted; }
    KeyedTable > .keyedtable--stale { color: $stale; text-style: bold; }
    """

    class Selected(Message):
        def __init__(self, table: KeyedTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

    def __init__(self, columns: Sequence[Column], *, id: str | None = None,
                 empty_text: str = "nothing to show") -> None:
        super().__init__(id=id)
        self.columns = tuple(columns)
        self.rows: list[Row] = []
        self._index: dict[str, int] = {}
        self.cursor_row = 0
        self.cursor_key: str | None = None
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.empty_text = empty_text
        self._strips: dict[str, tuple[Row, bool, int, Strip]] = {}
        self._header: Strip | None = None
        self._styles: dict[str, Style] = {}
        self.rendered_rows = 0  # rows rebuilt (not served from the cache): for tests and bench

    # ------------------------------------------------------------------ data
    @property
    def row_count(self) -> int:
        return len(self.rows)

    def keys(self) -> list[str]:
        return [r.key for r in self.rows]

    def cells(self, key: str) -> dict[str, str]:
        row = self.rows[self._index[key]]
        return {c.key: text for c, text in zip(self.columns, row.cells, strict=False)}

    def set_rows(self, rows: Sequence[Row]) -> None:
        """Show ``rows`` in this order; repaint only the lines whose row changed."""
        rows = list(rows)
        order_changed = [r.key for r in rows] != [r.key for r in self.rows]
        old = {r.key: r for r in self.rows} if not order_changed else {}
        self.rows = rows
        self._index = {r.key: i for i, r in enumerate(rows)}
        if order_changed:
            self.virtual_size = Size(self.size.width, len(rows) + 1)
            if self.cursor_key in self._index:
                self.cursor_row = self._index[self.cursor_key]
            else:
                self.cursor_row = min(self.cursor_row, max(0, len(rows) - 1))
                self.cursor_key = rows[self.cursor_row].key if rows else None
            self.refresh()
            return
        top = int(self.scroll_y)
        width = self.size.width
        for i, row in enumerate(rows):
            if old.get(row.key) != row and top <= i < top + self.size.height:
                self.refresh(Region(0, i - top + 1, width, 1))

    def set_sort(self, column: str | None, reverse: bool) -> None:
        if (column, reverse) != (self.sort_column, self.sort_reverse):
            self.sort_column, self.sort_reverse = column, reverse
            self._header = None
            self.refresh(Region(0, 0, self.size.width, 1))

    @property
    def selected_key(self) -> str | None:
        return self.cursor_key if self.cursor_key in self._index else None

    # ------------------------------------------------------------------ cursor
    def move_cursor(self, row: int) -> None:
        if not self.rows:
            return
        old = self.cursor_row
        row = max(0, min(row, len(self.rows) - 1))
        self.cursor_row = row
        self.cursor_key = self.rows[row].key
        top = int(self.scroll_y)
        visible = max(1, self.size.height - 1)
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + visible:
            self.scroll_to(y=row - visible + 1, animate=False)
        else:
            for i in (old, row):
                self.refresh(Region(0, i - top + 1, self.size.width, 1))

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor_row + direction * max(1, self.size.height - 2))

    def action_edge(self, end: int) -> None:
        self.move_cursor(len(self.rows) - 1 if end else 0)

    def action_open(self) -> None:
        if self.selected_key is not None:
            self.post_message(self.Selected(self, self.selected_key))

    def on_click(self, event) -> None:
        if event.y >= 1:
            self.move_cursor(int(self.scroll_y) + event.y - 1)
            self.focus()
            if getattr(event, "chain", 1) >= 2:  # double click opens
                self.action_open()

    # ------------------------------------------------------------------ rendering
    def _style(self, cls: str) -> Style:
        style = self._styles.get(cls)
        if style is None:
            base = self.rich_style
            style = base if not cls else base + self.get_component_rich_style(
                f"keyedtable--{cls}", partial=True)
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
        self.virtual_size = Size(self.size.width, len(self.rows) + 1)

    def on_focus(self) -> None:
        self._strips.clear()
        self.refresh()

    on_blur = on_focus

    def widths(self, width: int) -> tuple[int, ...]:
        fixed = sum(c.width for c in self.columns) + len(self.columns) - 1
        rest = max(8, width - fixed)
        return tuple(c.width or rest for c in self.columns)

    def _header_strip(self, width: int) -> Strip:
        if self._header is not None and self._header.cell_length == width:
            return self._header
        base = self._style("header")
        segments: list[Segment] = []
        for n, (col, w) in enumerate(zip(self.columns, self.widths(width), strict=True)):
            if n:
                segments.append(Segment(" ", base))
            here = col.key == self.sort_column
            title = col.title + (("▼" if self.sort_reverse else "▲") if here else "")
            text = fit(title, w, col.right)
            style = self._style("sorted") if here else base
            pos = text.find(col.sort_key) if col.sort_key else -1
            if pos < 0:
                segments.append(Segment(text, style))
            else:
                key_style = style + self._style("key")
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
            if i == 0:
                style = self._style("empty")
                return Strip([Segment(" " + self.empty_text, style)]).adjust_cell_length(
                    width, style)
            return Strip.blank(width, self._style(""))
        row = self.rows[i]
        is_cursor = i == self.cursor_row
        cached = self._strips.get(row.key)
        if cached is not None and cached[0] == row and cached[1] == is_cursor and \
                cached[2] == width:
            return cached[3]
        self.rendered_rows += 1
        base = self._style("cursor" if is_cursor else "")
        segments: list[Segment] = []
        for n, (col, w) in enumerate(zip(self.columns, self.widths(width), strict=True)):
            if n:
                segments.append(Segment(" ", base))
            text = fit(row.cells[n] if n < len(row.cells) else "", w, col.right)
            cls = row.styles[n] if n < len(row.styles) else None
            segments.append(Segment(text, base + self._style(cls) if cls else base))
        strip = Strip(segments).adjust_cell_length(width, base)
        self._strips[row.key] = (row, is_cursor, width, strip)
        if len(self._strips) > 2 * len(self.rows) + 64:
            self._strips = {k: v for k, v in self._strips.items() if k in self._index}
        return strip
