"""The host line under the header: this machine's CPU %, load average, RAM, swap and uptime, as
htop and btop users look for them. Hidden until the first reading and for a replayed log, whose
node is not this one."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from gputop.host.load import HostFacts
from gputop.tui.text import fmt


class HostLine(Widget):
    DEFAULT_CSS = """
    HostLine { height: 1; display: none; background: $panel; color: $foreground; }
    HostLine.-shown { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.facts: HostFacts | None = None

    def show(self, facts: HostFacts) -> None:
        if facts == self.facts:
            return
        self.facts = facts
        self.set_class(True, "-shown")
        self.refresh()

    def render(self) -> Text:
        if self.facts is None:
            return Text("")
        return Text(fmt.host_line(self.facts, self.size.width), no_wrap=True, end="")
