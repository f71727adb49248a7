"""The footer of every gputop screen: the screen's keys, drawn by gputop as one line.

Textual's Footer is a scrolling container of one styled widget per key (and one for the
command palette's key, docked right): about 20 DOM nodes whose building left 1.35 MB in the
allocator at 8x32 (#26), rebuilt - and the screen laid out again - each time a screen says its
bindings may have changed: on every focus change, on a screen being shown again, on each widget
mounted. This one is a single widget that draws the same cells as one Strip, from the same
theme variables, and draws them again only when the keys it shows change. Bindings of a group
are drawn one by one (gputop's have no groups); keys that do not fit are cut at the right, as
Textual's are.

A key can say what it just did in its own place for a few seconds (`t`: the theme it picked),
highlighted, in the same frame as what it changed: a toast comes a frame later (#26).
"""

from __future__ import annotations

from typing import NamedTuple

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget

# What the footer shows: each shown binding with whether it is enabled and its tooltip, and the
# palette's key with whether it is enabled
Keys = tuple[tuple[tuple[Binding, bool, str], ...], tuple[Binding, bool] | None]

SEPARATOR = "▏"  # the left edge of the palette's key: Textual's `border-left: vkey`


class Item(NamedTuple):
    """One key as the footer draws it."""

    key: str  # what a click on it simulates
    display: str  # the key as shown
    description: str
    enabled: bool
    tooltip: str
    said: bool = False  # its description is what the key just did (KeyFooter.say)


class KeyFooter(Widget, can_focus=False):
    """The screen's keys on one line, as Textual's footer draws them; a click runs a key."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"keyfooter--item", "keyfooter--key", "keyfooter--description",
                         "keyfooter--hover", "keyfooter--separator"}
    # Textual's Footer and FooterKey rules (not compact), on the footer's component classes
    DEFAULT_CSS = """
    KeyFooter { dock: bottom; height: 1; color: $footer-foreground;
                background: $footer-background; }
    KeyFooter > .keyfooter--item { background: $footer-item-background; }
    KeyFooter > .keyfooter--key { color: $footer-key-foreground;
                                  background: $footer-key-background; text-style: bold; }
    KeyFooter > .keyfooter--description { color: $footer-description-foreground;
                                          background: $footer-description-background; }
    KeyFooter > .keyfooter--hover { background: $block-hover-background; }
    KeyFooter > .keyfooter--separator { color: $foreground 20%; }
    """

    _shown: Keys | None = None  # the keys drawn; None: not asked yet
    _items: tuple[Item, ...] = ()
    _palette: Item | None = None  # the command palette's key, at the right edge
    _due = False  # a comparison is queued
    _hover: int | None = None  # the item under the mouse (len(_items): the palette's)
    _line: tuple[tuple, Strip] | None = None  # the last line drawn, with what it was drawn for
    _said: tuple[str, str] | None = None  # (action, text): what its key just did (say)
    _said_timer: Timer | None = None

    def __init__(self) -> None:
        super().__init__()
        self._styles: dict[tuple[str, bool, bool], Style] = {}

    def keys(self, screen: Screen) -> Keys:
        """Return what the footer shows for ``screen``: each shown binding with whether it is
        enabled and its tooltip, and the palette's key."""
        active = screen.active_bindings
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        return (tuple((b.binding, b.enabled, b.tooltip) for b in active.values()
                      if b.binding.show),
                None if palette is None or not self.app.ENABLE_COMMAND_PALETTE
                else (palette.binding, palette.enabled))

    def _show(self, keys: Keys) -> None:
        """Take ``keys`` (from keys()) as those drawn: one item per action, its first key."""
        shown, palette = keys
        display = self.app.get_key_display
        said_action, said = self._said or ("", "")
        by_action: dict[str, Item] = {}
        for binding, enabled, tooltip in shown:
            here = binding.action == said_action
            by_action.setdefault(binding.action, Item(
                binding.key, display(binding), said if here else binding.description, enabled,
                tooltip, here))
        self._shown = keys
        self._items = tuple(by_action.values())
        self._palette = None if palette is None else Item(
            palette[0].key, display(palette[0]), palette[0].description, palette[1],
            palette[0].tooltip or palette[0].description)
        self._hover = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, screen: Screen) -> None:
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        if not screen.is_active:
            # a screen under another one: the app's keys are asked of the screen on top
            # (a key the view over the dashboard hides would look gone); it is asked again
            # when this screen is shown
            return
        if not self._due:
            self._due = True  # several signals in one refresh are compared once
            self.call_after_refresh(self._compare)

    def _compare(self) -> None:
        self._due = False
        if self.is_attached and self.screen.is_active:
            keys = self.keys(self.screen)
            if keys != self._shown:
                self._show(keys)
                self.refresh()

    def say(self, action: str, text: str, seconds: float) -> bool:
        """Show ``text`` as the description of ``action``'s key for ``seconds``, highlighted:
        what the key just did, drawn in this refresh, with what it changed. Return whether it
        shows: False where this footer does not draw that key whole (a narrow terminal)."""
        if self._said_timer is not None:
            self._said_timer.stop()
        self._said = (action, text)
        self._show(self._shown or self.keys(self.screen))
        self.refresh()
        self._said_timer = self.set_timer(seconds, self._unsay)
        return any(index < len(self._items) and self._items[index].said
                   and end - start == self._width(self._items[index])
                   for start, end, index in self._cells())

    def _unsay(self) -> None:
        """Draw the key that said something with its own description again."""
        self._said = self._said_timer = None
        if self._shown is not None:
            self._show(self._shown)
            self.refresh()

    # ------------------------------------------------------------------ drawing
    def _cells(self) -> list[tuple[int, int, int]]:
        """(start, end, index) of each item drawn, in cells from the left edge: the keys from
        the left, cut where the palette's key starts; the palette's key (index len(_items))
        at the right edge."""
        width = self.size.width
        right = width - self._palette_width()
        spans = []
        x = 0
        for index, item in enumerate(self._items):
            if x >= right:
                break
            end = x + self._width(item)
            spans.append((x, min(end, right), index))
            x = end
        if self._palette is not None:
            spans.append((right, width, len(self._items)))
        return spans

    def _palette_width(self) -> int:
        """Return the cells the palette's key takes: its separator, itself, a blank."""
        return 0 if self._palette is None else self._width(self._palette, compact=True) + 2

    def render_line(self, y: int) -> Strip:
        if self._shown is None:  # the first frame: the keys the screen has now
            self._show(self.keys(self.screen))
        width = self.size.width
        fill = Style(bgcolor=self.rich_style.bgcolor)  # Textual pads with the background alone
        if y > 0:
            return Strip.blank(width, fill)
        key = (width, self._shown, self._said, self._hover, fill)
        if self._line is None or self._line[0] != key:
            self._line = (key, self._draw(width, fill))
        return self._line[1]

    def _draw(self, width: int, fill: Style) -> Strip:
        """Draw the line: the keys, cut or padded to where the palette's key starts, then
        the palette's key."""
        keys = [segment for index, item in enumerate(self._items)
                for segment in self._segments(item, index == self._hover or item.said)]
        right = width - self._palette_width()
        line = Strip(keys).adjust_cell_length(max(right, 0), fill)
        if self._palette is not None:
            hover = self._hover == len(self._items)
            palette = [Segment(SEPARATOR, self._style("separator", hover, True)),
                       *self._segments(self._palette, hover, compact=True),
                       Segment(" ", self._style("item", hover, True))]
            line = Strip.join([line, Strip(palette)])
        return line.crop(0, width).adjust_cell_length(width, fill)

    def _segments(self, item: Item, hover: bool, compact: bool = False) -> list[Segment]:
        """Draw one key as Textual's FooterKey does: ` key ` then `description `; compact
        (as Textual draws the palette's key): `key` then ` description`."""
        key = self._style("key", hover, item.enabled)
        if not item.description:
            return [Segment(item.display, key)]
        description = self._style("description", hover, item.enabled)
        if compact:
            return [Segment(item.display, key), Segment(f" {item.description}", description)]
        return [Segment(f" {item.display} ", key), Segment(f"{item.description} ", description)]

    def _width(self, item: Item, compact: bool = False) -> int:
        """Return the cells ``item`` takes, as _segments draws it."""
        return sum(cell_len(segment.text) for segment in self._segments(item, False, compact))

    def _style(self, part: str, hover: bool, enabled: bool) -> Style:
        """Return the Rich style of ``part`` of a key, its colours composed over the key's
        background as Textual composes a FooterKey's over the footer's."""
        cached = self._styles.get((part, hover, enabled))
        if cached is not None:
            return cached
        styles = self.get_component_styles
        footer = self.background_colors[1]
        item = footer + styles("keyfooter--hover" if hover else "keyfooter--item").background
        if part == "separator":  # a border: drawn over the footer, on the key's background
            style = Style(color=(footer + styles("keyfooter--separator").color).rich_color,
                          bgcolor=item.rich_color)
        elif part == "item":
            style = Style(bgcolor=item.rich_color)
        else:
            own = styles(f"keyfooter--{part}")
            background = item + own.background
            style = Style(color=(background + own.color).rich_color,
                          bgcolor=background.rich_color) + own.text_style
        if not enabled:
            style += Style(dim=True)  # Textual's `.-disabled { text-style: dim; }`
        self._styles[(part, hover, enabled)] = style
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._line = None

    # ------------------------------------------------------------------ mouse
    def _at(self, x: int) -> int | None:
        """Return the index of the item drawn at cell ``x``, None where none is."""
        return next((index for start, end, index in self._cells() if start <= x < end), None)

    def _item(self, index: int) -> Item:
        return self._palette if index == len(self._items) else self._items[index]  # type: ignore[return-value]

    def on_mouse_down(self, event: events.MouseDown) -> None:
        # Textual's footer runs a key on the button going down, and rings for a disabled one
        index = self._at(event.x)
        if index is None:
            return
        item = self._item(index)
        if item.enabled:
            self.app.simulate_key(item.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._hover_over(self._at(event.x))

    def on_leave(self, event: events.Leave) -> None:
        self._hover_over(None)

    def _hover_over(self, index: int | None) -> None:
        """Highlight the item at ``index`` (None: none), with its tooltip."""
        if index != self._hover:
            self._hover = index
            self.tooltip = None if index is None else self._item(index).tooltip or None
            self.refresh()
