"""The footer of every gputop screen: Textual's, rebuilt only when the keys it shows change.

Textual's Footer rebuilds all its key widgets each time a screen says its bindings may have
changed: on every focus change, on a screen being shown again, on each widget mounted. Opening
the process view asked it four times (about 9 ms each, and a new layout after each), going back
to the dashboard twice, for the same keys. This one compares what it would show with what it
shows, and rebuilds at most once per refresh, only when they differ; its first compose
already shows the screen's keys.
"""

from __future__ import annotations

from collections.abc import Hashable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """Textual's footer, drawn the same; rebuilt only when the keys it shows change."""

    _shown: Hashable = None  # what the last compose showed
    _due = False  # a rebuild is queued

    def keys(self, screen: Screen) -> Hashable:
        """Return what the footer shows for ``screen``: each shown binding with whether it is
        enabled and its tooltip, and the palette's key."""
        active = screen.active_bindings
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        return (tuple((b.binding, b.enabled, b.tooltip) for b in active.values()
                      if b.binding.show),
                None if palette is None else (palette.binding, palette.enabled),
                self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE)

    def compose(self) -> ComposeResult:
        # The keys from the screen's first frame on: Textual's footer composes empty until the
        # screen's first bindings signal, then rebuilds after that frame (a screen's first
        # open drew its keys 40-50 ms after the rest). Those the first focus changes are
        # rebuilt, as any change (bindings_changed).
        self.set_reactive(Footer._bindings_ready, True)
        self._shown = self.keys(self.screen)
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        if not screen.is_active:
            # a screen under another one: the app's keys are asked of the screen on top
            # (a key the view over the dashboard hides would look gone); it is asked again
            # when this screen is shown
            return
        if not self._due and self.keys(screen) != self._shown:
            self._due = True
            self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        self._due = False
        if self.is_attached and self.screen.is_active and self.keys(self.screen) != self._shown:
            await self.recompose()
