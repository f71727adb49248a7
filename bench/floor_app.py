"""The Textual floor: the least a Textual app costs, for bench/peers.py to set gputop beside.

A full-screen app with one line that it repaints every --interval seconds (the time, as a
dashboard's clock would) and nothing else; `q` quits.
"""

from __future__ import annotations

import sys
import time

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static


class Floor(App):
    BINDINGS = [Binding("q", "quit", "quit")]

    def __init__(self, interval: float) -> None:
        super().__init__()
        self.every = interval

    def compose(self) -> ComposeResult:
        yield Static("Textual floor", id="line")

    def on_mount(self) -> None:
        self.set_interval(self.every, self.tick)

    def tick(self) -> None:
        self.query_one("#line", Static).update(f"Textual floor {time.strftime('%H:%M:%S')}")


if __name__ == "__main__":
    Floor(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0).run()
