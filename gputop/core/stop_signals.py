"""The signals that ask a long run to end, and installing handlers for them politely.

Ctrl-C, SIGTERM (systemd, kill) and SIGHUP (the SSH session dropped) all mean "finish and exit".
A signal that was already ignored when gputop started stays ignored: `nohup gputop --query-gpu …
-f log.csv &` is how a log is kept running after logging out, and a non-interactive shell starts
its background jobs with SIGINT ignored so that a Ctrl-C meant for the script leaves them running.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterable
from types import FrameType

STOP_SIGNALS = tuple(s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP"))
                     if s is not None)

Handler = Callable[[int, FrameType | None], object]


def catch(handler: Handler, signals: Iterable[int] = STOP_SIGNALS) -> dict[int, object]:
    """Install ``handler`` for each of ``signals`` that is not ignored; return the handlers it
    replaced, for :func:`release`. Nothing is installed outside the main thread (Python allows
    handlers only there)."""
    previous: dict[int, object] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for sig in signals:
        old = signal.getsignal(sig)
        if old is signal.SIG_IGN:
            continue
        signal.signal(sig, handler)
        previous[sig] = old
    return previous


def release(previous: dict[int, object]) -> None:
    """Put back the handlers :func:`catch` replaced."""
    for sig, old in previous.items():
        # None: a handler set outside Python, which cannot be put back; the default is closest
        signal.signal(sig, old if old is not None else signal.SIG_DFL)  # type: ignore[arg-type]
    previous.clear()
