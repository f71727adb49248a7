"""Ending the dashboard on a signal the way a terminal program should.

SIGTERM (kill, systemd), SIGHUP (the SSH session dropped) and SIGINT (`kill -INT`; Ctrl-C itself
is a key in the dashboard's raw mode) end the app through `App.exit`, so Textual's driver puts the
terminal back (normal screen, cursor, mouse and keyboard modes) before the process exits with
128 + the signal number, as shells report a death by signal. Python's default would end the
process on the spot and leave the terminal in the alternate screen until the user types `reset`.

The handlers run on the event loop (not between two bytecodes of whatever was running), and a
signal that was ignored at start stays ignored (`nohup`).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable

from gputop.stop_signals import STOP_SIGNALS


def exit_on_stop_signals(exit_with: Callable[[int], None]) -> Callable[[], None]:
    """Call ``exit_with(128 + signum)`` on the running loop for each stop signal that is not
    ignored; return the function that removes the handlers again."""
    loop = asyncio.get_running_loop()
    installed: list[int] = []
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is signal.SIG_IGN:
            continue
        try:
            loop.add_signal_handler(sig, exit_with, 128 + sig)
        except (RuntimeError, ValueError, NotImplementedError):  # not the main thread, Windows
            continue
        installed.append(sig)

    def remove() -> None:
        for sig in installed:
            try:
                loop.remove_signal_handler(sig)
            except (RuntimeError, ValueError):  # the loop is already closed
                pass
        installed.clear()

    return remove
