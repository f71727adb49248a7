"""What a translucent screen draws of the screen beneath it: that screen tinted, as Textual
draws it, at a third of the cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.renderables.background_screen import BackgroundScreen
from textual.strip import Strip

from gputop.tui.widgets.strips import DirectLines

if TYPE_CHECKING:
    from textual.geometry import Region
    from textual.screen import Screen
    from typing_extensions import Self


def tinted(strips: list[Strip], color: Color, base: Style) -> list[Strip]:
    """Return ``strips`` under ``color`` over ``base`` (the translucent screen's own style) as
    Textual draws a screen beneath a translucent one (BackgroundScreen, drawn as the screen's
    content), working out each distinct style once: a screen of 120x40 has a few dozen, in
    over a thousand segments."""
    styles: dict[Style | None, Style] = {}
    out = []
    for strip in strips:
        segments = []
        for segment in strip:
            style = segment.style
            if style not in styles:
                (tint,) = BackgroundScreen.process_segments([Segment("", style)], color)
                styles[style] = base + tint.style
            segments.append(segment if segment.control else Segment(segment.text, styles[style]))
        out.append(Strip(segments, strip.cell_length))
    return out


class TintsBeneath(DirectLines):
    """Mixin (before a Screen class) for a screen with a translucent background, over the
    screen beneath it, which shows through tinted (a ModalScreen: gputop's dialogs).

    Textual tints the screen beneath each time such a screen is drawn anew (three times as
    a dialog opens), segment by segment through Rich's rendering: about 6 ms at 120x40 (#26).
    This mixin tints it at the same moments, from the same frame of the screen beneath,
    working out each distinct style once (about 2 ms), and hands the lines straight to the
    compositor while the screen's own CSS draws nothing around them (strips.DirectLines).
    """

    _beneath: tuple[tuple, list[Strip]] | None = None  # (what it was tinted for, its lines)

    def _draws_only_content(self) -> bool:
        return self._tinted() is not None and super()._draws_only_content()

    def render_line(self, y: int) -> Strip:
        lines = self._tinted()
        if lines is None:
            return super().render_line(y)
        return lines[y] if y < len(lines) else Strip.blank(self.size.width,
                                                           self.visual_style.rich_style)

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False,
                recompose: bool = False) -> Self:
        self._beneath = None  # drawn anew at the next frame, as Textual draws it
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._beneath = None

    def _tinted(self) -> list[Strip] | None:
        """Return the screen beneath, tinted, for this frame; None where Textual draws this
        screen's background itself (an opaque one, no screen beneath)."""
        background = self.styles.background
        beneath = self._screen_beneath()
        if background.a >= 1 or beneath is None:
            return None
        # the screen beneath as Textual's BackgroundScreen reads it; after a resize it is laid
        # out again while covered
        drawn = beneath._compositor
        key = (beneath, drawn.size, self.size, background)
        if self._beneath is None or self._beneath[0] != key:
            lines = drawn.render_strips()
            self._beneath = (key, tinted(lines, background, self.visual_style.rich_style))
        return self._beneath[1]

    def _screen_beneath(self) -> Screen | None:
        """Return the screen under this one in the app's stack (None: none, or not stacked)."""
        stack = self.app.screen_stack
        for below, screen in zip([None, *stack], stack):
            if screen is self:
                return below
        return None
