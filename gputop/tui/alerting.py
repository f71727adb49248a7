"""The dashboard's side of alerts: what the alert channels' threads hand to the app's thread.

The channels deliver on threads of their own (`gputop.alerts.notify.dispatch`); nothing there
may touch Textual or the terminal. The terminal channels (bell, OSC 9, OSC 777) write to an
`AppTerminal`, which posts the bytes to the app as a message (thread-safe, and it never waits):
the app writes them through Textual's driver on its own thread, between two frames, so they
never land inside another escape sequence; once the app is closing they are refused, and
nothing writes to a terminal that has been given back. Delivery troubles come the same way.
"""

from __future__ import annotations

from textual.message import Message
from textual.message_pump import MessagePump

from gputop.alerts.notify.dispatch import DeliveryEvent


class TerminalBytes(Message):
    """Bytes a terminal channel wrote, for the app to write through its driver."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class DeliveryTrouble(Message):
    """A delivery event from a channel's thread (the app says the troubles)."""

    def __init__(self, event: DeliveryEvent) -> None:
        super().__init__()
        self.event = event


class AppTerminal:
    """The `Writable` the terminal channels write to: hands each write to ``app``'s thread."""

    def __init__(self, app: MessagePump) -> None:
        self._app = app

    def write(self, data: bytes, /) -> int:
        """Post ``data`` to the app; OSError once the app no longer takes messages (closing)."""
        if not self._app.post_message(TerminalBytes(data.decode("utf-8", "replace"))):
            raise OSError("the dashboard has closed")
        return len(data)

    def flush(self) -> None:
        """Nothing to flush: the app's driver writes what it is given at once."""
