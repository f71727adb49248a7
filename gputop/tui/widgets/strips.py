"""What the line-rendering widgets (GPU cards, keyed tables) share: cached styles and Strips.

Each such widget keeps the Rich styles it looked up from its component classes in ``_styles`` and
its rendered lines in ``_strips``; a theme change invalidates both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

if TYPE_CHECKING:  # a mixin for widgets: what it calls comes from the Widget after it
    from textual.widget import Widget

    _Mixin = Widget
else:
    _Mixin = object


class StripCache(_Mixin):
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
