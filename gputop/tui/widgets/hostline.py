"""The host line under the header: this machine's CPU %, load average, RAM, swap and uptime, as
htop and btop users look for them. It holds its row from the first frame, its labels muted with
no values until the first reading (a second after launch), so that nothing under it moves when
the reading comes. A replayed log, whose node is not this one, has no host line at all."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from gputop.host.load import HostFacts
from gputop.tui.text import fmt
from gputop.tui.widgets.strips import TextLines


class HostLine(TextLines, Widget):
    COMPONENT_CLASSES = {"hostline--pending"}
    DEFAULT_CSS = """
    HostLine { height: 1; background: $panel; color: $foreground; }
    HostLine > .hostline--pending { color: $muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.facts: HostFacts | None = None

    def show(self, facts: HostFacts) -> None:
        if facts == self.facts:
            return
        self.facts = facts
        self.refresh()

    def render(self) -> Text:
        line = fmt.host_line(self.facts, self.size.width)
        if self.facts is None:
            return Text(line, style=self.get_component_rich_style("hostline--pending"),
                        no_wrap=True, end="")
        return Text(line, no_wrap=True, end="")
