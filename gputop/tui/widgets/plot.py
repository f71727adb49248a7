"""History plot of one GPU (utilization, memory, power in %): a braille line chart drawn here.

Drawn here rather than with plotext (the advisor's curve still uses it): importing plotext took
11 MB of the dashboard's memory and 0.3 s, for three lines on a fixed 0-100 % scale. Only
foreground colours are set, so the widget's own (theme) background shows; each series takes the
theme's plot variables. The plot is rebuilt only when visible and when its data or size changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.color import Color
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

if TYPE_CHECKING:
    from gputop.history import History

REDRAW_S = 3.0
SERIES = (("util", "plot-util"), ("memory", "plot-memory"), ("power", "plot-power"))


def style_rgb(style: Style, fallback: tuple[int, int, int]) -> tuple[int, int, int]:
    color = style.color
    if color is None:
        return fallback
    try:
        triplet = color.get_truecolor()
    except Exception:  # a default/ANSI colour without a fixed RGB
        return fallback
    return (triplet.red, triplet.green, triplet.blue)


# Braille: each cell is 2 dots wide and 4 high; the bit of the dot at (column, row from the top).
_DOT_BITS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))


def value_ticks(rows: int) -> tuple[int, int]:
    """Return how many of ``rows`` the chart takes and in how many equal steps its value axis
    is labelled: the labels fall on rows exactly that far apart (0, 25, 50, 75, 100 each two
    rows apart, never 2, 2, 1, 2). Rows that no step fits evenly give one row back (left blank
    above the chart), so that every label stands where its value is drawn."""
    if rows <= 2:
        return rows, 1
    used = rows if (rows - 1) % 2 == 0 else rows - 1
    return used, 4 if (used - 1) % 4 == 0 else 2


def _tick_label(value: float) -> str:
    """A value-axis label as short as it can be: 100, 12.5, 0.25."""
    return f"{value:.0f}" if value == int(value) else f"{value:.3g}"


def render_plot(series: Sequence[tuple[str, Sequence[float | None], tuple[int, int, int]]],
                width: int, height: int, axis_rgb: tuple[int, int, int],
                times: Sequence[float], top: float = 100.0) -> Text:
    """Plot series (oldest first, sampled at ``times``; percentages unless ``top`` says another
    upper end of the value axis) into a Text of ``width`` x ``height`` cells: a framed braille
    line chart, 0-``top`` up the side, seconds before now along the bottom. The time axis comes
    from the samples' own times, so it stays right when the interval changed in between. Where
    two series share a cell their dots merge and the later series' colour shows."""
    top = top if top > 0 else 100.0
    room = max(1, height - 3)  # the top and bottom frame lines and the time labels
    rows, steps = value_ticks(room)
    ticks_y = [(1 - k / steps, _tick_label(top * (1 - k / steps))) for k in range(steps + 1)]
    label_w = max(len(word) for _, word in ticks_y)
    plot_w = max(1, width - label_w - 2)  # the label column, then the frame on either side
    dots: list[list[int]] = [[0] * plot_w for _ in range(rows)]
    colours: list[list[tuple[int, int, int] | None]] = [[None] * plot_w for _ in range(rows)]
    xs_all = [t - times[-1] for t in times] if times else []
    span = -xs_all[0] if xs_all else 0.0
    dot_w, dot_h = plot_w * 2, rows * 4

    def to_dot(x: float, value: float) -> tuple[int, int]:
        col = round((x + span) / span * (dot_w - 1)) if span > 0 else dot_w - 1
        level = round(min(top, max(0.0, value)) / top * (dot_h - 1))
        return col, dot_h - 1 - level

    for _label, values, rgb in series:
        xs_here = xs_all[-len(values):] if values else []
        points = [to_dot(x, v) for x, v in zip(xs_here, values, strict=False) if v is not None]
        if len(points) < 2:
            continue
        for (c0, r0), (c1, r1) in zip(points, points[1:]):
            steps = max(abs(c1 - c0), abs(r1 - r0), 1)
            for i in range(steps + 1):
                col = c0 + round((c1 - c0) * i / steps)
                row = r0 + round((r1 - r0) * i / steps)
                cell_row, cell_col = row // 4, col // 2
                dots[cell_row][cell_col] |= _DOT_BITS[col % 2][row % 4]
                colours[cell_row][cell_col] = rgb

    axis = Style(color=Color.from_rgb(*axis_rgb))
    styles: dict[tuple[int, int, int], Style] = {}
    labels = {round((1 - fraction) * (rows - 1)): word for fraction, word in ticks_y}
    text = Text(no_wrap=True, end="")
    text.append((" " * (label_w + plot_w + 2) + "\n") * (room - rows))
    text.append(" " * label_w + "┌" + "─" * plot_w + "┐\n", axis)
    for r in range(rows):
        label = labels.get(r)
        text.append(f"{label:>{label_w}}┤" if label else " " * label_w + "│", axis)
        run: list[str] = []
        run_rgb: tuple[int, int, int] | None = None
        for c in range(plot_w):
            bits, cell_rgb = dots[r][c], colours[r][c]
            if cell_rgb != run_rgb and run:
                _append_run(text, run, run_rgb, styles)
                run = []
            run.append(chr(0x2800 + bits) if bits else " ")
            run_rgb = cell_rgb
        _append_run(text, run, run_rgb, styles)
        text.append("│\n", axis)
    ticks: list[tuple[int, str]] = []
    if len(xs_all) > 1 and span > 0:
        ticks = [(0, f"-{span:.0f}s"), (round((plot_w - 1) / 2), f"-{span / 2:.0f}s"),
                 (plot_w - 1, "now")]
    bottom = ["─"] * plot_w
    under = [" "] * (plot_w + 2)
    for i, (col, word) in enumerate(ticks):
        bottom[col] = "┬"
        # the first label starts at its tick, the last ends at it, the middle one centres on it
        at = col if i == 0 else col - len(word) + 1 if i == len(ticks) - 1 else col - (len(word) - 1) // 2
        for j, ch in enumerate(word):
            if 0 <= at + j < len(under):
                under[at + j] = ch
    text.append(" " * label_w + "└" + "".join(bottom) + "┘\n", axis)
    text.append(" " * (label_w + 1) + "".join(under).rstrip().ljust(plot_w + 1), axis)
    return text


def _append_run(text: Text, run: list[str], rgb: tuple[int, int, int] | None,
                styles: dict[tuple[int, int, int], Style]) -> None:
    if not run:
        return
    if rgb is None:
        text.append("".join(run))
        return
    style = styles.get(rgb)
    if style is None:
        style = styles[rgb] = Style(color=Color.from_rgb(*rgb))
    text.append("".join(run), style)


class HistoryPlot(Widget):
    """The selected GPU's history, read from ``history`` (the sampler's); say which GPU with
    ``show(card)``."""

    COMPONENT_CLASSES = {"plot--util", "plot--memory", "plot--power", "plot--axis",
                         "plot--title"}
    DEFAULT_CSS = """
    HistoryPlot { height: 12; background: $surface; }
    HistoryPlot > .plot--util { color: $plot-util; }
    HistoryPlot > .plot--memory { color: $plot-memory; }
    HistoryPlot > .plot--power { color: $plot-power; }
    HistoryPlot > .plot--axis { color: $muted; }
    HistoryPlot > .plot--title { color: $primary; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.interval = 1.0
        self.history: History | None = None
        self._card = None
        self._text: Text | None = None
        self._key: tuple | None = None
        self._drawn_at = 0
        self._counts: dict[int, int] = {}

    def _samples(self, card) -> int:
        return self._counts.get(id(card), 0)

    def show(self, card, new_sample: bool = False) -> None:
        """Plot ``card`` (the selected GPU); ``new_sample`` once per sample."""
        if new_sample:
            self._counts[id(card)] = self._counts.get(id(card), 0) + 1
        self._card = card
        if self.display and self.size.width > 0:
            self._rebuild()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        if self._card is not None and self.size.width > 0:
            self._rebuild()  # redraws only if the theme's plot colours changed

    def on_resize(self) -> None:
        if self._card is not None:
            self._rebuild()

    def _rebuild(self) -> None:
        card = self._card
        if card is None or self.history is None:
            return
        w, h = self.size.width, self.size.height

        def color(cls: str) -> tuple[int, int, int]:
            return style_rgb(self.get_component_rich_style(cls, partial=True), (128, 128, 128))

        colors = tuple(color(c) for c in ("plot--util", "plot--memory", "plot--power",
                                          "plot--axis"))
        # A plot costs a few milliseconds to build and repaints a dozen full lines: redraw it
        # every REDRAW_S seconds of samples (at once for another GPU, size or theme).
        every = max(1, round(REDRAW_S / self.interval))
        samples = self._samples(card)
        key = (id(card), w, h, colors)
        if key == self._key and samples - self._drawn_at < every:
            return
        self._key = key
        self._drawn_at = samples
        if w < 20 or h < 5:
            self._text = Text("(too small for a plot)")
        else:
            n = max(10, w - 8)
            times, (util, memory, power) = self.history.device_columns(
                card.index, ("utilization_gpu_pct", "memory_pct", "power_pct"), points=n)
            series = [
                ("util", util, color("plot--util")),
                ("memory", memory, color("plot--memory")),
                ("power", power, color("plot--power")),
            ]
            body = render_plot(series, w, h - 1, color("plot--axis"), times)
            title = Text.assemble(
                (f" GPU {card.index} history ", self.get_component_rich_style("plot--title")),
                ("util", self.get_component_rich_style("plot--util")), "  ",
                ("memory", self.get_component_rich_style("plot--memory")), "  ",
                ("power (% of limit)", self.get_component_rich_style("plot--power")),
                end="",
            )
            self._text = Text("\n", end="").join([title, body])
        self.refresh()

    def render(self) -> Text:
        if self._text is None:
            self._rebuild()
        return self._text or Text("")
