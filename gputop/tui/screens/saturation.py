"""The saturation panel's screen (`s`): the panel over the dashboard, fed each sample."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from gputop.core.model import Snapshot
from gputop.tui.text.wants import SATURATION_PANEL
from gputop.tui.widgets.saturation import SaturationPanel

if TYPE_CHECKING:
    from gputop.sampler import Sampler


class SaturationScreen(Screen[None]):
    """The saturation panel over the dashboard, fed each sample (TakesSnapshots); the sampler
    reads GPM on every tick while it is open. Built once and shown again (:meth:`opened`), with
    the sample on screen drawn in its first frame: built and fed after its first frame on each
    open, it drew the panel twice and built its cards each time (`s` settled at 114-120 ms).
    ``first``: the sample on screen when it is built."""

    BINDINGS = [Binding("escape,s,q", "close", "back to the dashboard")]
    DEFAULT_CSS = """
    SaturationScreen > VerticalScroll { background: $background; }
    SaturationScreen #sat-title { background: $panel; color: $primary; text-style: bold;
                                  height: 1; padding: 0 1; }
    """

    def __init__(self, sampler: Sampler, first: Snapshot | None = None) -> None:
        super().__init__()
        self.sampler = sampler
        self._first = first

    def compose(self) -> ComposeResult:
        yield Static("Saturation: how busy the GPUs really are (s / esc: back)", id="sat-title")
        with VerticalScroll():
            yield SaturationPanel(id="saturation")

    def on_mount(self) -> None:
        self.opened(self._first)
        self._first = None

    def opened(self, first: Snapshot | None) -> None:
        """Start showing samples again (GPM read on every tick), from ``first`` on."""
        self.sampler.want("saturation-panel", SATURATION_PANEL)
        if first is not None:
            self.update(first)

    def on_unmount(self) -> None:
        self.sampler.unwant("saturation-panel")

    def update(self, snapshot: Snapshot) -> None:
        self.query_one(SaturationPanel).update_snapshot(snapshot, self.sampler.history)

    def action_close(self) -> None:
        self.sampler.unwant("saturation-panel")  # kept installed: it is not unmounted
        self.dismiss(None)
