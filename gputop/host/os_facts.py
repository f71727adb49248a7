"""What this host's kernel says of one process: its state, threads, parent, nice, working
directory and start, for the process detail view.

Read from /proc as psutil reads them (the same words for the state, the same start time), without
psutil: loading psutil was about 9 ms of the view's first open (the dashboard loads it only to
end its children when its terminal is gone). All but the working directory come from one read
of ``/proc/PID/stat``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gputop.host import load
from gputop.host.processes import CLK_TCK, stat_fields

# psutil's word for each state letter of /proc/PID/stat (psutil/_pslinux.py PROC_STATUSES)
STATES = {
    "R": "running", "S": "sleeping", "D": "disk-sleep", "T": "stopped", "t": "tracing-stop",
    "Z": "zombie", "X": "dead", "x": "dead", "K": "wake-kill", "W": "waking", "I": "idle",
    "P": "parked",
}
DELETED = " (deleted)"  # the kernel's mark on a path that was removed


@dataclass(frozen=True, slots=True)
class OsFacts:
    started: float  # seconds since the epoch, as psutil's create_time()
    status: str  # psutil's word for the state ("sleeping"); "?" for a letter it has none for
    threads: int
    parent: int  # the parent's PID
    nice: int
    cwd: str | None  # None where it may not be read: another user's process, a zombie


def read(pid: int) -> OsFacts:
    """The kernel's facts of process ``pid``. Raises FileNotFoundError or ProcessLookupError
    where there is no such process, PermissionError where it may not be inspected."""
    fields = stat_fields(pid)
    return OsFacts(started=_started(fields),
                   status=STATES.get(fields[0].decode("ascii", "replace"), "?"),
                   threads=int(fields[17]), parent=int(fields[1]), nice=int(fields[16]),
                   cwd=cwd(pid))


def started(pid: int) -> float:
    """Return when process ``pid`` started, in seconds since the epoch (psutil's
    ``create_time()``). Raises as :func:`read` does."""
    return _started(stat_fields(pid))


def _started(fields: list[bytes]) -> float:
    with open("/proc/stat") as fh:
        boot = load.boot_time(fh.read())
    return int(fields[19]) / CLK_TCK + boot


def cwd(pid: int) -> str | None:
    """The working directory of ``pid`` as psutil gives it: the link's text up to a NUL, without
    the kernel's ``(deleted)`` where no such path exists; None where it may not be read."""
    try:
        path = os.readlink(f"/proc/{pid}/cwd").split("\x00")[0]
    except OSError:  # not ours (EACCES), a zombie's or an exited process's (ENOENT)
        return None
    if path.endswith(DELETED) and not os.path.exists(path):
        path = path.removesuffix(DELETED)
    return path
