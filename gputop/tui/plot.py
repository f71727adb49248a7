"""History plot of one GPU (utilization, memory, power in %) drawn with plotext.

plotext 6 renders to ANSI text; we parse that into a Rich Text, drop plotext's backgrounds so the
widget's own (theme) background shows, and colour each series with the theme's plot variables.
Building a plot costs a few milliseconds, so it is rebuilt only when visible and when its data or
size changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

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


def render_plot(series: Sequence[tuple[str, Sequence[float | None], tuple[int, int, int]]],
                width: int, height: int, axis_rgb: tuple[int, int, int],
                times: Sequence[float], top: float = 100.0) -> Text:
    """Plot series (oldest first, sampled at ``times``; percentages unless ``top`` says another
    upper end of the value axis) into a Text of ``width`` x ``height`` cells. The time axis
    comes from the samples' own times, so it stays right when the interval changed in between."""
    import plotext as plt
    from plotext import marker, pixel

    fig = plt.figure
    fig.clear.all()
    fig.plot_size(width, height)
    axis = pixel(foreground=axis_rgb)
    fig.axes(pixel=axis)
    fig.ruler("both").pixel(axis)
    fig.ruler(1).lim(0, top)
    xs_all = [t - times[-1] for t in times] if times else []
    if len(xs_all) > 1:
        span = -xs_all[0]
        fig.ruler(0).ticks([-span, -span / 2, 0], [f"-{span:.0f}s", f"-{span / 2:.0f}s", "now"])
    for label, values, rgb in series:
        xs_here = xs_all[-len(values):] if values else []
        points = [(x, v) for x, v in zip(xs_here, values, strict=False) if v is not None]
        if len(points) < 2:
            continue
        xs, ys = zip(*points, strict=False)
        sig = fig.signal(list(xs), list(ys), marker=marker("braille").fill(pixel(foreground=rgb)))
        sig.lines()
        sig.label(label)
        fig.draw(sig)
    fig.legend(False)
    ansi = fig.build().string()
    text = Text.from_ansi(ansi, no_wrap=True, end="")
    # Keep only foreground colours: the theme's background shows through.
    text.spans = [type(s)(s.start, s.end, Style(color=s.style.color)
                          if isinstance(s.style, Style) else s.style) for s in text.spans]
    return text


class HistoryPlot(Widget):
    """The selected GPU's history; feed it with ``show(card)``."""

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
        if card is None:
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
            series = [
                ("util", list(card.util_history)[-n:], color("plot--util")),
                ("memory", list(card.memory_history)[-n:], color("plot--memory")),
                ("power", list(card.power_history)[-n:], color("plot--power")),
            ]
            body = render_plot(series, w, h - 1, color("plot--axis"),
                               list(card.time_history)[-n:])
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
