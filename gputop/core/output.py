"""A command's result on standard output: all of it, or one line saying why not.

`gputop snapshot --json >/dev/full` must not end in a traceback, nor exit 0 having written
nothing: a script would take the empty output for an answer.
"""

from __future__ import annotations

import os
import sys

from gputop.core.errors import GputopError


class OutputError(GputopError):
    """Standard output cannot be written (a full disk, /dev/full, an I/O error)."""


def write_stdout(text: str) -> None:
    """Write ``text`` and flush it. A closed pipe stays BrokenPipeError (the entry point treats a
    reader that went away as success); any other failure is an OutputError."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        _discard_pending()
        reason = getattr(exc, "strerror", None) or str(exc)  # a ValueError has no strerror
        raise OutputError(f"cannot write to standard output: {reason}") from None


def _discard_pending() -> None:
    """Point descriptor 1 at /dev/null, so that the interpreter's flush at exit of what is still
    buffered succeeds quietly instead of printing a second error."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(fd, sys.stdout.fileno())
        finally:
            os.close(fd)
    except (OSError, ValueError, AttributeError):
        pass
