"""A table whose rows are keyed (by process, by host, by user) and repaint one line at a time.

Textual's DataTable re-renders every visible cell through Rich after any `update_cell`; with 64
nodes or 32 processes changing every second that alone costs more than the whole viewer may.
Here each row is cached as a Strip, keyed by its cells, and only rows whose cells changed are
rebuilt; of those, only the span of cells that changed goes to the terminal. Cells are plain
strings put into Segments: nothing in them is ever read as markup, and every cell is shown
through ``gputop.core.visible`` (a process, user, container or host name holding ``ESC ]0;…`` shows
as ``^[]0;…``): rows keep the text as it is, for filtering and sorting.

Subclasses (the process table) set ``COMPONENT_PREFIX`` and their own CSS for the component
classes ``<prefix>--header``, ``--sorted``, ``--key``, ``--cursor``, ``--empty`` and any per-cell
style class their rows name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from gputop.core.visible import visible
from gputop.tui.text import fmt
from gputop.tui.text.command import elide_middle
from gputop.tui.widgets.strips import StripCache, line_strip


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int  # 0: takes the rest
    right: bool = False
    sort_key: str | None = None  # the key that sorts by this column (underlined in the title)
    middle: bool = False  # a text too long loses its middle, not its end (a command line)
    # A text too long for its column is first shown as this gives it (a command line with its
    # program's path cut to its name); one that fits is shown whole.
    shorten: Callable[[str], str] | None = None


class TableRow(Protocol):
    """Declare what the table shows of a row: its key, its cells, and per cell a component
    class suffix ("bad") or None (an empty tuple: no cell styled)."""

    @property
    def key(self) -> str: ...

    @property
    def cells(self) -> tuple[str, ...]: ...

    @property
    def styles(self) -> tuple[str | None, ...]: ...


@dataclass(frozen=True)
class Row:
    key: str
    cells: tuple[str, ...]
    styles: tuple[str | None, ...] = ()  # per cell: a component class suffix ("bad") or None


def fit(text: str, width: int, right: bool = False, middle: bool = False) -> str:
    """``text`` made visible, padded or cut to exactly ``width`` terminal cells (an ellipsis
    marks a cut: at the end, or in the ``middle``)."""
    text = visible(text)
    if middle and len(text) > width and fmt.one_cell_each(text):
        text = elide_middle(text, width)
    if fmt.one_cell_each(text):  # the usual case: no measuring
        return fmt.rfit(text, width) if right else fmt.fit(text, width)
    if width <= 0:
        return ""
    if cell_len(text) > width:
        return set_cell_size(text[: width * 2], width - 1) + "…"
    pad = width - cell_len(text)
    return " " * pad + text if right else text + " " * pad


def _at(values: tuple, n: int) -> Any:
    return values[n] if n < len(values) else None


class KeyedTable(StripCache, ScrollView, can_focus=True):
    """Keyboard: up/down/page/home/end move the cursor; enter opens the row.

    The flexible column (width 0, a command line) scrolls sideways by ``scroll_sideways``: its
    texts are shown from ``text_offset`` on, and its title says how far (``COMMAND +16``)."""

    BINDINGS = [
        Binding("up", "cursor(-1)", "up", show=False),
        Binding("down", "cursor(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home", "edge(0)", "first", show=False),
        Binding("end", "edge(1)", "last", show=False),
        Binding("enter", "open", "open", show=False),
    ]
    COMPONENT_PREFIX = "keyedtable"
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
    DOUBLE_CLICK_OPENS = True

    def __init_subclass__(cls, inherit_component_classes: bool = True, **kwargs: Any) -> None:
        """Take Textual's ``inherit_component_classes`` class option, which its Widget does not
        pass on (Textual 8): a subclass with its own prefix (the process table) sets it False,
        so that Textual builds no styled node for each class it never draws with (#26)."""
        super().__init_subclass__(**kwargs)
        cls._inherit_component_classes = inherit_component_classes

    class Selected(Message):
        def __init__(self, table: KeyedTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

    def __init__(self, columns: Sequence[Column], *, id: str | None = None,
                 empty_text: str = "nothing to show") -> None:
        super().__init__(id=id)
        self._hidden: frozenset[str] = frozenset()
        self.columns = tuple(columns)
        self.rows: Sequence[TableRow] = []
        self._index: dict[str, int] = {}
        self.cursor_row = 0
        self.cursor_key: str | None = None
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.empty_text = empty_text
        self._strips: dict[str, tuple[tuple, tuple, bool, int, Strip]] = {}
        self._header: Strip | None = None
        self._widths: tuple[int, ...] = ()
        self._styles: dict[str, Style] = {}
        self.rendered_rows = 0  # rows rebuilt (not served from the cache): for tests and bench
        self.text_offset = 0  # characters of the flexible column scrolled off to the left

    # ------------------------------------------------------------------ columns
    @property
    def columns(self) -> tuple[Column, ...]:
        """Every column a row has a cell for, shown or not."""
        return self._columns

    @columns.setter
    def columns(self, columns: Sequence[Column]) -> None:
        self._columns = tuple(columns)
        self._visible: tuple[tuple[int, Column], ...] | None = None

    def hide_columns(self, keys) -> None:
        """Leave the columns named by ``keys`` off the screen (rows keep their cells)."""
        self._hidden = frozenset(keys)
        self.redraw_columns()

    def redraw_columns(self) -> None:
        """After the columns or the hidden ones changed: widths, header and rows drawn anew."""
        self._visible = None
        self._widths = ()
        self._strips.clear()
        self._header = None
        self.refresh()

    @property  # type: ignore[misc]  # shadows Textual's DOMNode.visible: rename (#25 tui)
    def visible(self) -> tuple[tuple[int, Column], ...]:  # type: ignore[override]
        """The columns drawn, each with its cell's place in a row; never none at all."""
        if self._visible is None:
            every = tuple(enumerate(self._columns))
            self._visible = tuple(nc for nc in every if nc[1].key not in self._hidden) or every
        return self._visible

    # ------------------------------------------------------------------ data
    @property
    def row_count(self) -> int:
        return len(self.rows)

    def keys(self) -> list[str]:
        return [r.key for r in self.rows]

    def cells(self, key: str) -> dict[str, str]:
        row = self.rows[self._index[key]]
        return {c.key: text for c, text in zip(self.columns, row.cells, strict=False)}

    def set_rows(self, rows: Sequence) -> None:
        """Show ``rows`` in this order; repaint only the cells that changed."""
        old_rows = self.rows
        old_cursor_row = self.cursor_row
        rows = list(rows)
        self.rows = rows
        self._index = {r.key: i for i, r in enumerate(rows)}
        # The cursor follows its row; a vanished row leaves it at the same place.
        if self.cursor_key in self._index:
            self.cursor_row = self._index[self.cursor_key]
        elif rows:
            self.cursor_row = max(0, min(self.cursor_row, len(rows) - 1))
            self.cursor_key = rows[self.cursor_row].key
        else:
            self.cursor_row, self.cursor_key = 0, None
        if len(rows) != len(old_rows):
            self.virtual_size = Size(self.size.width, len(rows) + 1)
            self.refresh()
            return
        width, height = self.size
        top = int(self.scroll_y)
        regions = []
        # The cursor highlight moved: repaint where it was and where it is.
        whole = {old_cursor_row, self.cursor_row} if old_cursor_row != self.cursor_row else ()
        for i, (a, b) in enumerate(zip(old_rows, rows, strict=False)):
            y = i - top + 1
            if not 1 <= y < height:
                continue
            if i in whole or a.key != b.key:
                regions.append(Region(0, y, width, 1))
            elif a.cells != b.cells or a.styles != b.styles:
                # Only the cells that changed (usually a few figures) go to the terminal.
                x0, x1 = self._cells_span(a.cells, b.cells, width, a.styles, b.styles)
                regions.append(Region(x0, y, x1 - x0, 1))
        if regions:
            self.refresh(*regions)

    def _cells_span(self, a: tuple[str, ...], b: tuple[str, ...], width: int,
                    a_styles: tuple = (), b_styles: tuple = ()) -> tuple[int, int]:
        """The columns [x0, x1) covering every cell whose text or style differs."""
        x = 0
        first = last = None
        for (n, _), w in zip(self.visible, self.column_widths(width), strict=True):
            if _at(a, n) != _at(b, n) or _at(a_styles, n) != _at(b_styles, n):
                if first is None:
                    first = x
                last = min(width, x + w)
            x += w + 1
        return (first or 0, last if last is not None else width)

    def set_sort(self, column: str | None, reverse: bool) -> None:
        if (column, reverse) != (self.sort_column, self.sort_reverse):
            self.sort_column, self.sort_reverse = column, reverse
            self._header = None
            self.refresh(Region(0, 0, self.size.width, 1))

    def scroll_sideways(self, direction: int) -> None:
        """Scroll the flexible column's texts by a third of its width in ``direction`` (-1, 1),
        no further than the longest one's end: the rest of a command line too long for the
        screen, read in place."""
        place = self._flexible()
        if place is None:
            return
        n, col, w = place
        longest = max((len(self._flexible_text(_at(r.cells, n) or "", col, w))
                       for r in self.rows), default=0)
        offset = max(0, min(self.text_offset + direction * max(4, w // 3), longest - w))
        if offset != self.text_offset:
            self.text_offset = offset
            self.redraw_columns()

    def _flexible(self) -> tuple[int, Column, int] | None:
        """The flexible column shown: its cell's place in a row, the column and its width."""
        for (n, col), w in zip(self.visible, self.column_widths(self.size.width), strict=True):
            if col.width == 0:
                return n, col, w
        return None

    @staticmethod
    def _flexible_text(text: str, col: Column, width: int) -> str:
        """``text`` as the flexible column scrolls it: whole where it fits, else shortened."""
        text = visible(text)
        return col.shorten(text) if col.shorten and len(text) > width else text

    def _cell_text(self, text: str, col: Column, width: int) -> str:
        """``text`` fitted to its column: shortened, elided, or scrolled sideways."""
        if col.width == 0 and (col.shorten or self.text_offset):
            text = self._flexible_text(text, col, width)
            if self.text_offset:  # read sideways: a plain cut, no middle left out
                return fit(text[self.text_offset:], width, col.right)
        return fit(text, width, col.right, col.middle)

    @property
    def selected_key(self) -> str | None:
        return self.cursor_key if self.cursor_key in self._index else None

    @property
    def selected(self):
        """The row under the cursor, or None."""
        i = self._index.get(self.cursor_key) if self.cursor_key is not None else None
        return self.rows[i] if i is not None else None

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

    def on_click(self, event: Click) -> None:
        if event.y >= 1:
            self.move_cursor(int(self.scroll_y) + event.y - 1)
            self.focus()
            if self.DOUBLE_CLICK_OPENS and event.chain >= 2:
                self.action_open()

    # ------------------------------------------------------------------ rendering
    def _style(self, cls: str) -> Style:
        """The widget's style plus component class ``<prefix>--<cls>`` ("": the widget's own)."""
        style = self._styles.get(cls)
        if style is None:
            base = self.rich_style
            style = base if not cls else base + self.get_component_rich_style(
                f"{self.COMPONENT_PREFIX}--{cls}", partial=True)
            self._styles[cls] = style
        return style

    def forget_rendering(self) -> None:
        super().forget_rendering()
        self._header = None

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
        columns = [c for _, c in self.visible]
        fixed = sum(c.width for c in columns) + len(columns) - 1
        rest = max(8, width - fixed)
        self._widths = tuple(c.width or rest for c in columns)
        return self._widths

    widths = column_widths

    def empty_message(self) -> str:
        return self.empty_text

    def _header_strip(self, width: int) -> Strip:
        if self._header is not None and self._header.cell_length == width:
            return self._header
        base = self._style("header")
        arrow = "▼" if self.sort_reverse else "▲"
        segments: list[Segment] = []
        for i, ((_, col), w) in enumerate(zip(self.visible, self.column_widths(width),
                                              strict=True)):
            if i:
                segments.append(Segment(" ", base))
            here = col.key == self.sort_column
            title = col.title
            if col.width == 0 and self.text_offset:
                title = f"{title} +{self.text_offset}"
            if col.width == 0 and (hidden := self._hidden_sort()) is not None:
                # sorted by a column not shown: said where the rows are, in the same frame
                text = fit(f"{title}  sorted by {hidden.title}{arrow}", w, col.right)
                segments += [Segment(text[:len(title)], base),
                             Segment(text[len(title):], self._style("sorted"))]
                continue
            if here:  # the arrow always shows: a title too long for it loses spaces, then ends
                if len(title) + 1 > w:
                    title = title.replace(" ", "")
                title = title[: max(0, w - 1)] + arrow
            text = fit(title, w, col.right)
            style = self._style("sorted") if here else base
            # Underline the column's sort key inside its title (the key is shown in `?` too).
            pos = text.upper().find(col.sort_key) if col.sort_key else -1
            if pos < 0:
                segments.append(Segment(text, style))
            else:
                key_style = style + self._style("key")
                segments += [Segment(text[:pos], style), Segment(text[pos], key_style),
                             Segment(text[pos + 1:], style)]
        self._header = Strip(segments).adjust_cell_length(width, base)
        return self._header

    def _hidden_sort(self) -> Column | None:
        """Return the column the rows are sorted by where it is not shown, else None."""
        if self.sort_column is None or any(c.key == self.sort_column for _, c in self.visible):
            return None
        return next((c for c in self._columns if c.key == self.sort_column), None)

    def _row_strip(self, cells: tuple[str, ...], styles: tuple, base: Style,
                   width: int) -> Strip:
        visible = self.visible
        texts = [self._cell_text(_at(cells, n) or "", col, w)
                 for (n, col), w in zip(visible, self.column_widths(width), strict=True)]
        if not any(styles):
            # One style for the whole line: one text cut into ASCII runs that Rich measures fast.
            text = " ".join(texts)
            segments = [Segment(run, base) for run in fmt.ascii_runs(text)]
            return line_strip(segments, width, base, fmt.one_cell_each(text))
        segments = []
        for i, ((n, _), text) in enumerate(zip(visible, texts, strict=True)):
            if i:
                segments.append(Segment(" ", base))
            cls = _at(styles, n)
            segments.append(Segment(text, base + self._style(cls) if cls else base))
        return Strip(segments).adjust_cell_length(width, base)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return self._header_strip(width)
        i = int(self.scroll_y) + y - 1
        if i >= len(self.rows):
            if i == 0:
                style = self._style("empty")
                return Strip([Segment(" " + self.empty_message(), style)]).adjust_cell_length(
                    width, style)
            return Strip.blank(width, self._style(""))
        row = self.rows[i]
        styles = row.styles
        is_cursor = i == self.cursor_row
        cached = self._strips.get(row.key)
        if cached is not None and cached[0] == row.cells and cached[1] == styles and \
                cached[2] == is_cursor and cached[3] == width:
            return cached[4]
        self.rendered_rows += 1
        strip = self._row_strip(row.cells, styles, self._style("cursor" if is_cursor else ""),
                                width)
        self._strips[row.key] = (row.cells, styles, is_cursor, width, strip)
        if len(self._strips) > 4 * len(self.rows) + 64:  # forget rows long gone
            self._strips = {k: v for k, v in self._strips.items() if k in self._index}
        return strip
