"""What the line-rendering widgets (GPU cards, keyed tables) share: cached styles and Strips.

Each such widget keeps the Rich styles it looked up from its component classes in ``_styles`` and
its rendered lines in ``_strips``; a theme change invalidates both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip

from gputop.tui.text import fmt

if TYPE_CHECKING:  # a mixin for widgets: what it calls comes from the Widget after it
    from textual.widget import Widget

    _Mixin = Widget
else:
    _Mixin = object


class DirectLines(_Mixin):
    """Mixin (before the Widget class) that hands the compositor the widget's own lines.

    Textual passes every line through its styles cache, which draws borders, padding,
    outlines, tint and opacity around and over ``render_line``'s strip - about 40 µs a line,
    paid for each of the thirty lines that change every tick, though these widgets' CSS
    draws none of that. While it draws none, the lines go straight from ``render_line``
    (cropped and filtered as Textual would); once a style asks for any, Textual draws them.
    """

    def render_lines(self, crop: Region) -> list[Strip]:
        if not self._draws_only_content():
            return super().render_lines(crop)
        width = self.size.width
        strips = self.lines_in(crop.line_range)
        if any(strip.cell_length != width for strip in strips):
            base, background = self.background_colors
            inner = Style(bgcolor=(base + background).rich_color)
            strips = [strip.adjust_cell_length(width, inner) for strip in strips]
        filters = self.get_line_filters()
        if filters:
            background = self.background_colors[1]
            for line_filter in filters:
                strips = [strip.apply_filter(line_filter, background) for strip in strips]
        x1, x2 = crop.column_span
        if (x1, x2) != (0, width):
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips

    def lines_in(self, rows: range) -> list[Strip]:
        """Return the widget's ``rows``, each as ``render_line`` draws it."""
        return [self.render_line(y) for y in rows]

    def _draws_only_content(self) -> bool:
        """Say whether the styles cache would pass each line through unchanged."""
        styles = self.styles
        return (
            not any(styles.gutter)
            and not any(edge for edge, _ in styles.outline)
            and not styles.tint.a
            and styles.text_opacity == 1.0
            and styles.hatch in (None, "none")
            and self.opacity == 1.0
        )


class StripCache(DirectLines):
    """Mixin (before the Widget class) for widgets with ``_styles`` and ``_strips`` dicts."""

    _styles: dict
    _strips: dict

    def forget_rendering(self) -> None:
        """Drop every cached style and line; the next render builds them again."""
        self._styles.clear()
        self._strips.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.forget_rendering()
        self.refresh()


def line_strip(segments: list[Segment], width: int, fill: Style, one_cell: bool) -> Strip:
    """``segments`` as a line of exactly ``width`` cells, padded with ``fill``.

    ``one_cell``: every character of the segments takes one cell, so a line as long as
    ``width`` needs no measuring (the common case on each tick).
    """
    used = sum(len(s.text) for s in segments) if one_cell else -1
    if one_cell and used < width:
        segments = [*segments, Segment(" " * (width - used), fill)]
        used = width
    if used == width:
        return Strip(segments, cell_length=width)
    return Strip(segments).adjust_cell_length(width, fill)


class TextLines(DirectLines):
    """Mixin (before the Widget class) for a widget that renders a Rich ``Text``, a line of it
    per row: draws each line as a Strip straight from its spans, as Textual would draw it (the
    same cells, styles and selection offsets), instead of converting it into Textual's content
    on every refresh - a third of a millisecond a line, paid each second by the header, the host
    line and the hint bar, and by the saturation panel's fifty-odd lines when it opens. A line
    wider than the widget is cut with an ellipsis. While part of the widget is selected,
    Textual draws it (the selection's highlight is Textual's)."""

    _drawn: tuple[tuple, list[Strip]] | None = None  # (what was drawn, its lines)
    _base: Style | None = None  # the widget's own style, until its styles change

    def render_line(self, y: int) -> Strip:
        drawn = self._text_strips()
        if drawn is None:
            return super().render_line(y)
        return drawn[y] if y < len(drawn) else self._blank()

    def lines_in(self, rows: range) -> list[Strip]:
        drawn = self._text_strips()  # the Text rendered once for every row asked
        if drawn is None:
            return super().lines_in(rows)
        return [drawn[y] if y < len(drawn) else self._blank() for y in rows]

    def _blank(self) -> Strip:
        """Return a row under the Text's last line as Textual draws one: spaces in the
        widget's own style."""
        return Strip.blank(self.size.width, self._own_style())

    def _own_style(self) -> Style:
        if self._base is None:  # composed from every ancestor's styles, each time
            self._base = self.rich_style
        return self._base

    def _text_strips(self) -> list[Strip] | None:
        """Return the rendered Text's lines as Strips, kept while the Text is the same; None
        where Textual draws instead (a selection, or a render that is not a Text)."""
        if self.text_selection is not None:
            return None
        text = self.render()
        if not isinstance(text, Text):
            return None
        width = self.size.width
        key = (width, text.plain, text.style, tuple(text.spans))
        if self._drawn is not None and self._drawn[0] == key:
            return self._drawn[1]
        base = self._own_style()
        pad = Style(bgcolor=base.bgcolor)  # Textual pads a line with the background alone
        console = self.app.console
        own = base + console.get_style(text.style) if text.style else base
        lines = text.split("\n", allow_blank=True) if "\n" in text.plain else [text]
        strips = [_text_strip(line, y, width, own, pad, console)
                  for y, line in enumerate(lines)]
        self._drawn = (key, strips)
        return strips

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._drawn = None
        self._base = None


def _text_strip(text: Text, y: int, width: int, own: Style, pad: Style, console) -> Strip:
    """Return line ``y`` of a widget: ``text`` drawn over the widget's style ``own``, cut or
    padded to ``width`` cells."""
    # A line of one-cell characters (the common case) is measured by its length: Rich's
    # measure keeps each string it is given (shell.MEASURES_KEPT_S), and a line holding a
    # clock or a reading is a new string every tick.
    one_cell = fmt.one_cell_each(text.plain)
    if (len(text.plain) if one_cell else text.cell_len) > width:
        text = text.copy()
        text.truncate(width, overflow="ellipsis")
    segments = []
    x = 0
    for seg in text.render(console, end=""):
        if seg.text:
            style = own + seg.style if seg.style else own
            segments.append(Segment(seg.text, style + Style.from_meta({"offset": (x, y)})))
            x += len(seg.text) if one_cell else seg.cell_length
    # an empty line starts with a zero-width run, as Textual's does
    empty = [Segment("", own + Style.from_meta({"offset": (0, y)}))]
    return Strip(segments or empty, cell_length=x).adjust_cell_length(width, pad)
