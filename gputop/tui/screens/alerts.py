"""The alerts screen (`!`): every alert transition since gputop started, newest first, the ones
firing now marked, each acknowledged with a key; and what each channel delivered or failed.

Built once and shown again (as the process view): the table repaints only the rows that
changed (`KeyedTable`), and the channels' lines only when their counts do."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from gputop.alerts.notify.dispatch import ChannelStatus
from gputop.alerts.runtime import Alerting
from gputop.core.model import Snapshot
from gputop.tui.screens import HidesDashboardKeys
from gputop.tui.text.alerts import COLUMNS, AlertRow, alert_rows, channel_lines
from gputop.tui.widgets.footer import KeyFooter
from gputop.tui.widgets.keyed_table import Column, KeyedTable

TITLE = "Alerts, newest first (a: acknowledge · A: acknowledge all · ! / esc: back)"


class AlertsTable(KeyedTable):
    """The transitions, one a row; enter acknowledges the selected one as `a` does."""

    DOUBLE_CLICK_OPENS = False


class AlertsScreen(HidesDashboardKeys, Screen[None]):
    """The dashboard's `Alerting` drawn over the dashboard; it takes each sample
    (TakesSnapshots) for the channels' counts and the rows' clock."""

    BINDINGS = [
        Binding("escape,exclamation_mark,q", "close", "back"),
        Binding("a,space", "acknowledge", "acknowledge"),
        Binding("A", "acknowledge_all", "acknowledge all"),
    ]
    DEFAULT_CSS = """
    AlertsScreen { background: $background; }
    AlertsScreen #alerts-title { background: $panel; color: $primary; text-style: bold;
                                 height: 1; padding: 0 1; }
    AlertsScreen #alerts-channels-title { color: $primary; text-style: bold; height: 1;
                                          padding: 0 1; }
    AlertsScreen #alerts-channels { height: auto; max-height: 8; padding: 0 1; }
    """

    class Acknowledged(Message):
        """A person acknowledged alerts here: the header's count changed."""

    def __init__(self, alerting: Alerting, now: float) -> None:
        super().__init__()
        self.alerting = alerting
        self.now = now
        self._channels: tuple[ChannelStatus, ...] | None = None  # drawn last

    def compose(self) -> ComposeResult:
        yield Static(TITLE, id="alerts-title")
        yield AlertsTable([Column(key, title, width) for key, title, width in COLUMNS],
                          id="alerts-table", empty_text="No alert since gputop started.")
        yield Static("Channels", id="alerts-channels-title")
        yield Static(id="alerts-channels")
        yield KeyFooter()

    @property
    def table(self) -> AlertsTable:
        return self.query_one("#alerts-table", AlertsTable)

    def on_mount(self) -> None:
        self.show_alerts(self.now)
        self.table.focus()

    def show_alerts(self, now: float | None = None) -> None:
        """Show the alerts as they are now (the table repaints only what changed)."""
        if now is not None:
            self.now = now
        self.table.set_rows(alert_rows(self.alerting.history(), self.alerting.firing, self.now))
        self._show_channels()

    def _show_channels(self) -> None:
        statuses = self.alerting.status()
        if statuses == self._channels:
            return
        self._channels = statuses
        text = Text(end="")
        # the channels' times are this machine's clock, not the samples' (a simulator's)
        for i, (line, style) in enumerate(channel_lines(statuses, time.time())):
            text.append(("\n" if i else "") + line, style)
        self.query_one("#alerts-channels", Static).update(text)

    def update(self, snapshot: Snapshot) -> None:
        self.now = snapshot.time
        self._show_channels()

    def action_acknowledge(self) -> None:
        row = self.table.selected
        if isinstance(row, AlertRow):
            self.alerting.acknowledge(row.alert)
            self._acknowledged()

    def action_acknowledge_all(self) -> None:
        for record in self.alerting.history():
            if not record.acknowledged:
                self.alerting.acknowledge(record.alert)
        self._acknowledged()

    def on_keyed_table_selected(self, message: KeyedTable.Selected) -> None:
        self.action_acknowledge()

    def _acknowledged(self) -> None:
        self.show_alerts()
        self.post_message(self.Acknowledged())

    def action_close(self) -> None:
        self.dismiss(None)
