"""The terminal's own channels: the bell, and desktop notifications through escape sequences.

A desktop notification sent as bytes to the terminal reaches the person's desktop over SSH,
with nothing installed on the GPU node, in the terminals that read it:

- OSC 9, ``ESC ] 9 ; text BEL``: iTerm2's "post a notification" (iTerm2's escape code
  documentation), also read by WezTerm. ConEmu and Windows Terminal read ``OSC 9 ; <digit> ;`` as
  commands of their own (9;4 is a progress bar), so the text here always begins with a word.
- OSC 777, ``ESC ] 777 ; notify ; title ; body BEL``: rxvt-unicode's notify extension, also
  read by WezTerm and foot.
- Inside tmux (3.3 and later, with ``set -g allow-passthrough on``) either must be wrapped as
  ``ESC P tmux; … ESC \\`` with every ESC doubled: `tmux_passthrough`.

A terminal that reads neither ignores the sequence. The text is made safe first: `safe_text`
writes every control character (ESC, BEL, a C1 byte such as ST, a newline) and every
invisible or reordering character visibly (`gputop.core.visible`), so nothing in an alert's
text can end the sequence early and have the terminal obey what follows; ``;`` is replaced in
OSC 777's fields, which it separates.

`TerminalNotifier` writes the bytes to a writable it is given. It is called from the
dispatcher's thread: the writable must be safe to call from there (the dashboard hands one that
passes the bytes to the app's own thread, so they never land inside another escape sequence).
"""

from __future__ import annotations

from typing import Literal, Protocol

from gputop.alerts.model import Alert, DeliveryError
from gputop.alerts.notify import payloads
from gputop.core.visible import visible

ESC = "\x1b"
BEL = "\x07"
MAX_TEXT = 240  # terminals cap an OSC's length; a notification is a glance, not a report

TerminalKind = Literal["bell", "osc9", "osc777"]
TERMINAL_KINDS: tuple[TerminalKind, ...] = ("bell", "osc9", "osc777")


class Writable(Protocol):
    """Where the bytes go: the terminal, or what hands them to it."""

    def write(self, data: bytes, /) -> object: ...

    def flush(self) -> None: ...


def safe_text(text: str, limit: int = MAX_TEXT) -> str:
    """Return ``text`` as one visible line of at most ``limit`` characters: no control,
    invisible or reordering character is left to act."""
    return payloads.cut(visible(" ".join(text.split())), limit)


def bell() -> bytes:
    """Return the terminal bell."""
    return BEL.encode()


def osc9(text: str) -> bytes:
    """Return ``ESC ] 9 ; text BEL`` for ``text``, made safe."""
    body = safe_text(text)
    if body[:1].isdigit():
        body = "gputop: " + body  # never a ConEmu "9;4;…" command
    return f"{ESC}]9;{body}{BEL}".encode()


def osc777(title: str, body: str) -> bytes:
    """Return ``ESC ] 777 ; notify ; title ; body BEL``, both made safe."""
    return (f"{ESC}]777;notify;{safe_text(title).replace(';', ',')};"
            f"{safe_text(body).replace(';', ',')}{BEL}").encode()


def tmux_passthrough(sequence: bytes) -> bytes:
    """Return ``sequence`` wrapped for tmux to pass to the terminal outside it."""
    return b"\x1bPtmux;" + sequence.replace(b"\x1b", b"\x1b\x1b") + b"\x1b\\"


def alert_bytes(kind: TerminalKind, alert: Alert, tmux: bool = False) -> bytes:
    """Return what a terminal channel of ``kind`` writes for ``alert``."""
    if kind == "bell":
        return bell()  # the bell passes through tmux by itself
    if kind == "osc9":
        data = osc9(f"{payloads.headline(alert)}: {alert.summary}")
    else:
        data = osc777(f"gputop: {payloads.headline(alert)}", alert.summary)
    return tmux_passthrough(data) if tmux else data


class TerminalNotifier:
    """Writes the bell or a desktop notification to ``out`` for each alert."""

    def __init__(self, name: str, kind: TerminalKind, out: Writable, tmux: bool = False) -> None:
        self._name = name
        self._kind = kind
        self._out = out
        self._tmux = tmux

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"TerminalNotifier(name={self._name!r}, kind={self._kind!r}, tmux={self._tmux})"

    def describe(self) -> str:
        """Return what the channel is, as messages name it: ``terminal osc9``."""
        return f"terminal {self._kind}" + (" through tmux" if self._tmux else "")

    def send(self, alert: Alert, timeout_s: float) -> None:
        """Write the bytes; a terminal that is gone (EIO, a closed stream) is a DeliveryError."""
        try:
            self._out.write(alert_bytes(self._kind, alert, self._tmux))
            self._out.flush()
        except (OSError, ValueError) as exc:
            raise DeliveryError(f"cannot write to the terminal: {exc}") from None
