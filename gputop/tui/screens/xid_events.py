"""The Xid events screen (`x`): every Xid seen, newest first, with its meaning, the job it hit
and what to do (gputop.analysis.xid)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from gputop.analysis.xid import XidLog
from gputop.core.model import Snapshot
from gputop.core.visible import visible
from gputop.tui.screens import HidesDashboardKeys
from gputop.tui.text.xid_events import event_lines, source_line


class XidEventsScreen(HidesDashboardKeys, Screen[None]):
    """The app's XidLog drawn over the dashboard, redrawn as samples come (TakesSnapshots)
    only when the log has changed."""

    BINDINGS = [Binding("escape,x,q", "close", "back to the dashboard")]
    DEFAULT_CSS = """
    XidEventsScreen > VerticalScroll { background: $background; padding: 0 1; }
    XidEventsScreen #xid-title { background: $panel; color: $primary; text-style: bold;
                                 height: 1; padding: 0 1; }
    """

    def __init__(self, log: XidLog, now: float) -> None:
        super().__init__()
        self.xids = log
        self.now = now
        self._shown: tuple[int, float] | None = None  # (events, now) drawn last

    def compose(self) -> ComposeResult:
        yield Static("Xid errors, newest first (x / esc: back)", id="xid-title")
        with VerticalScroll():
            yield Static(self._text(), id="xid-events")

    def _text(self) -> Text:
        events = self.xids.events()
        self._shown = (len(events), self.now)
        text = Text(end="")
        for line, style in event_lines(events, self.now):
            text.append(visible(line) + "\n", style)  # a process name may hold anything
        text.append("\n" + source_line(), "dim")
        return text

    def update(self, snapshot: Snapshot) -> None:
        self.now = snapshot.time
        self.query_one("#xid-events", Static).update(self._text())

    def action_close(self) -> None:
        self.dismiss(None)
