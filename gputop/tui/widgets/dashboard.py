"""The dashboard body: GPU widgets, an optional history plot and the process table.

`DashboardView` needs no backend: feed it with ``update(snapshot)`` (the cluster view does so for
one remote node). It picks its layout from its own size: a grid of 4-line cards when they fit,
one line per GPU when they do not (16 GPUs at 120x40, anything at 80x24). A MIG GPU's instances
follow its card or line: one line each where they fit, else one line of chips per GPU, else a
summary (count, busiest, fullest) on the GPU's own line. Without MIG, cards get a fifth line of
video-engine and link rates where the width and height leave room for them (8 GPUs two to a row
from 154 columns). It says when that line comes and goes (``RatesShown``), so that the app reads
those values only while they show.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.message import Message
from textual.widget import Widget

from gputop.core.model import Snapshot
from gputop.history import History
from gputop.tui.text.rates import RATES_CARD_WIDTH
from gputop.tui.text.wants import DASHBOARD as WANTS  # noqa: F401 - what it reads
from gputop.tui.widgets.gpu import (
    CARD_HEIGHT,
    CARD_MIN_WIDTH,
    HALF_LINE_MIN,
    GpuCard,
    GpuPanel,
    mig_lines,
)
from gputop.tui.widgets.plot import HistoryPlot
from gputop.tui.widgets.processes import ProcessTable

if TYPE_CHECKING:
    from textual.geometry import Size
    from textual.layout import DockArrangeResult

TABLE_MIN_ROWS = 8  # header + 7 processes: below this the process table is not worth showing
PLOT_HEIGHT = 12


def panel_height(instances: Sequence[int], cols: int, compact: bool, mig_style: str) -> int:
    """Lines the GPU panel takes: rows of ``cols`` GPUs (``instances``: each GPU's MIG instance
    count), each row as tall as its tallest GPU, with a blank line between rows of cards."""
    own = 1 if compact else CARD_HEIGHT
    tall = [own + mig_lines(n, mig_style) for n in instances]
    rows = [max(tall[i:i + cols]) for i in range(0, len(tall), cols)]
    return sum(rows) + (0 if compact else len(rows) - 1)


def choose_layout(width: int, height: int, count: int, plot: bool,
                  instances: Sequence[int] = ()) -> tuple[bool, int, int, str]:
    """(compact, columns, GPU area height, MIG style) for ``count`` GPUs in a ``width`` x
    ``height`` body; ``instances`` gives each GPU's MIG instance count (none: no MIG)."""
    if count <= 0:
        return False, 1, 1, "lines"
    instances = tuple(instances) or (0,) * count
    cols = max(1, min(count, width // CARD_MIN_WIDTH))
    extra = PLOT_HEIGHT if plot else 0
    fits = height - TABLE_MIN_ROWS - extra
    # Every instance on a line of its own first (cards, then one line per GPU); then one line
    # of chips per MIG GPU; then only a summary on each GPU's line.
    for compact, columns, style in ((False, cols, "lines"), (True, 1, "lines"),
                                    (True, 1, "chips")):
        if style == "chips" and not any(instances):
            break
        needed = panel_height(instances, columns, compact, style)
        if needed <= fits:
            return compact, columns, needed, style
    room = max(3, fits)
    cols = 1
    if count > room and width >= 2 * HALF_LINE_MIN + GpuPanel.GAP_X:
        cols = 2  # two half-width lines per row (16 GPUs in 8 lines of an 80x24 terminal)
    return True, cols, min(math.ceil(count / cols), room), "inline"


def rates_layout(width: int, height: int, count: int, plot: bool) -> tuple[int, int] | None:
    """(columns, GPU area height) of cards with the rates line, each at least RATES_CARD_WIDTH
    wide, if they fit beside the process table (and the plot); None where they do not. Never
    one tall column of several GPUs: the rates are not worth a screen of scrolling."""
    cols = min(count, (width + GpuPanel.GAP_X) // (RATES_CARD_WIDTH + GpuPanel.GAP_X))
    if count <= 0 or cols < min(count, 2):
        return None
    rows = math.ceil(count / cols)
    full = rows * (CARD_HEIGHT + 1) + (rows - 1)
    if full + TABLE_MIN_ROWS + (PLOT_HEIGHT if plot else 0) > height:
        return None
    return cols, full


class DashboardView(Widget):
    DEFAULT_CSS = """
    DashboardView { height: 1fr; layout: vertical; }
    DashboardView #plot { display: none; }
    DashboardView #plot.-shown { display: block; }
    """

    class RatesShown(Message):
        """The cards' rates line appeared (``shown``) or went away."""

        def __init__(self, shown: bool) -> None:
            super().__init__()
            self.shown = shown

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.snapshot: Snapshot | None = None
        self.selected_gpu: int | None = None
        self.only_selected = False
        self.plot_choice: bool | None = None  # None: automatic (shown when it fits)
        self.interval = 1.0
        self.compact = False
        self._layout_key: tuple | None = None
        self._table: ProcessTable | None = None
        self._plot: HistoryPlot | None = None
        self._panel: GpuPanel | None = None

    def compose(self) -> ComposeResult:
        yield GpuPanel(id="gpus")
        yield HistoryPlot(id="plot")
        yield ProcessTable(id="procs")

    @property
    def table(self) -> ProcessTable:
        if self._table is None:
            self._table = self.query_one(ProcessTable)
        return self._table

    @property
    def plot(self) -> HistoryPlot:
        if self._plot is None:
            self._plot = self.query_one(HistoryPlot)
        return self._plot

    @property
    def panel(self) -> GpuPanel:
        if self._panel is None:
            self._panel = self.query_one(GpuPanel)
        return self._panel

    @property
    def rates(self) -> bool:
        """Whether the cards show their rates line (see ``rates_layout``)."""
        return self.panel.rates

    @property
    def cards(self) -> dict[int, GpuCard]:
        return self.panel.cards

    # ------------------------------------------------------------------ feeding
    def attach(self, history: History) -> None:
        """Read the past from ``history`` (the plot; the table's per-job energy): the sampler's,
        or the node's a cluster view keeps. Its owner appends each snapshot before ``update``."""
        self.plot.history = history
        self.table.history = history

    def update(self, snapshot: Snapshot, now: float | None = None) -> None:
        """Show one snapshot (already in the attached history)."""
        self.snapshot = snapshot
        panel = self.panel
        count = len(panel.cards)
        panel.update(snapshot.devices, snapshot.time, snapshot.hints)
        if len(panel.cards) != count:
            if self.selected_gpu is None and panel.cards:
                self.selected_gpu = min(panel.cards)
            self._mark_selected()
        self._relayout()  # nothing unless GPUs came or MIG instances changed (its key)
        self.table.update(snapshot, now)
        if self.plot.has_class("-shown") and self.selected_gpu in self.cards:
            self.plot.show(self.cards[self.selected_gpu], new_sample=True)

    def set_interval(self, interval: float) -> None:  # type: ignore[override]  # shadows Textual's timer (#25 tui)
        self.interval = interval
        self.plot.interval = interval
        self.panel.set_stale_after(max(3.0, 3 * interval))

    # ------------------------------------------------------------------ selection
    def select_gpu(self, index: int | None = None, step: int = 0) -> int | None:
        order = sorted(self.cards)
        if not order:
            return None
        if index is None:
            cur = order.index(self.selected_gpu) if self.selected_gpu in order else 0
            index = order[(cur + step) % len(order)]
        if index not in self.cards:
            return self.selected_gpu
        self.selected_gpu = index
        self._mark_selected()
        if self.only_selected:
            self.table.set_only_gpu(index)
        if self.plot.has_class("-shown"):
            self.plot.show(self.cards[index])
        return index

    def set_only_selected(self, only: bool) -> None:
        self.only_selected = only
        self.table.set_only_gpu(self.selected_gpu if only else None)

    def toggle_plot(self) -> bool:
        self.plot_choice = not self.plot.has_class("-shown")
        self._layout_key = None
        self._relayout()
        return self.plot.has_class("-shown")

    def _mark_selected(self) -> None:
        self.panel.select(self.selected_gpu)

    def on_gpu_panel_selected(self, message: GpuPanel.Selected) -> None:
        self.select_gpu(message.index)

    # ------------------------------------------------------------------ layout
    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        """Arrange the panel, plot and table for ``size``, the layout picked for that size
        first: Textual paints a frame before any Resize handler runs, so a layout picked on
        Resize showed the first frame with cards one to a row (#26)."""
        self._relayout(size.width, size.height)
        return super().arrange(size, optimal)

    def _tell_rates(self) -> None:
        self.post_message(self.RatesShown(self.panel.rates))

    def _shape(self) -> tuple[int, ...]:
        """Each GPU's MIG instance count, in panel order: what the layout depends on."""
        return tuple(self.cards[i].instance_count() for i in sorted(self.cards))

    def _relayout(self, width: int | None = None, height: int | None = None) -> None:
        """Pick the layout for a body of ``width`` x ``height`` (default: this widget's size);
        nothing unless the size, the GPUs, their MIG instances or the plot choice changed."""
        if width is None or height is None:
            width, height = self.size.width, self.size.height
        count = len(self.cards)
        shape = self._shape()
        key = (width, height, count, self.plot_choice, shape)
        if key == self._layout_key or width <= 0 or height <= 0:
            return
        self._layout_key = key
        plot = self.plot_choice
        if plot is None:  # automatic: show the plot only where it fits beside full cards
            compact, _, _, style = choose_layout(width, height, count, True, shape)
            plot = not compact and style == "lines" and count > 0
        compact, cols, gpu_h, style = choose_layout(width, height, count, plot, shape)
        if plot and height - gpu_h - PLOT_HEIGHT < TABLE_MIN_ROWS:
            plot = height - gpu_h - PLOT_HEIGHT >= 3  # the user asked for it: keep 3 table rows
        # the rates line is laid out for plain cards; MIG instances' lines come first
        wide = None if compact or any(shape) else rates_layout(width, height, count, plot)
        if wide is not None:
            cols, gpu_h = wide
        self.compact = compact
        panel = self.panel
        rates = panel.rates
        panel.configure(compact, cols, style, rates=wide is not None)
        if panel.rates != rates:
            # Told from this widget's own turn: a message made during arrange (the screen's
            # turn) names the screen as its sender and stops bubbling here, short of the app.
            self.call_later(self._tell_rates)
        panel.styles.height = gpu_h
        self.plot.set_class(plot, "-shown")
        if plot and self.selected_gpu in self.cards:
            self.plot.show(self.cards[self.selected_gpu])
