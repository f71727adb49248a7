"""Sending a signal to a GPU process from the dashboard, with the checks that make it safe.

Only the user's own processes, by the kernel's rule for a sender without privilege: the
process's real or saved user is this user. In a terminal, root may also signal any process, as
from its shell; a browser viewer of `gputop web` never borrows that privilege (``owner_only``):
whoever holds the page is not root's shell. The PID must still be the process the dashboard
showed (its start time matches, so a reused PID is refused); a process that already exited is
reported as such, not as an error. No Textual here.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import Literal

from gputop.host.owners import parse_uids

SIGNALS: dict[str, int] = {
    "SIGTERM": signal.SIGTERM,
    "SIGKILL": signal.SIGKILL,
    "SIGINT": signal.SIGINT,
}
# Backends whose processes are not processes of this machine.
NOT_LOCAL_BACKENDS = frozenset({"sim", "replay"})
START_TOLERANCE_S = 2.0


@dataclass(frozen=True)
class Outcome:
    ok: bool
    message: str
    severity: Literal["information", "warning", "error"] = "information"  # Textual notify's


def local_pid(process) -> int | None:
    """The PID by which this gputop can signal a GPU process: the device reports host PIDs, so
    inside a PID namespace it is the PID here that attribution found (``namespace_pid``); None
    for a process outside this namespace."""
    from gputop.host.pidns import detect

    if process.outside_pid_namespace:
        return None
    if detect().host_pids_resolve:
        return process.pid
    return process.namespace_pid


def refusal(pid: int, started: float | None = None, *, owner_only: bool = False) -> str | None:
    """Why this process may not be signalled, or None if it may. ``owner_only``: root's
    privilege does not count (a browser viewer asks). Read from /proc as psutil reads it,
    without psutil: loading it was 6-10 ms of the first `k` (a dashboard loads it only to end
    its children when its terminal is gone)."""
    from gputop.host import os_facts  # the dashboard asks only whether processes are local

    try:
        with open(f"/proc/{pid}/status", "rb") as fh:  # its Name is whatever bytes it chose
            uids = parse_uids(fh.read().decode("utf-8", "replace"))
        created = os_facts.started(pid)
    except (FileNotFoundError, ProcessLookupError):
        return None  # gone: send() reports it kindly
    except PermissionError:
        return f"no permission to inspect process {pid}"
    if uids is None:
        return f"no user ids in /proc/{pid}/status"
    real, _, saved = uids
    euid = os.geteuid()
    if euid not in (real, saved):
        if owner_only:
            return (f"process {pid} belongs to another user (uid {real}); a web viewer "
                    "may signal only the serving user's own processes")
        if euid != 0:
            return (f"process {pid} belongs to another user (uid {real}); only root may "
                    "signal it")
    if started is not None and abs(created - started) > START_TOLERANCE_S:
        return f"PID {pid} now belongs to a different process (it was reused)"
    return None


def send(pid: int, name: str, started: float | None = None, *,
         owner_only: bool = False) -> Outcome:
    if name not in SIGNALS:
        return Outcome(False, f"unknown signal {name}", "error")
    reason = refusal(pid, started, owner_only=owner_only)
    if reason is not None:
        return Outcome(False, reason, "error")
    try:
        os.kill(pid, SIGNALS[name])
    except ProcessLookupError:
        return Outcome(True, f"process {pid} has already exited")
    except PermissionError:
        return Outcome(False, f"no permission to signal process {pid}", "error")
    return Outcome(True, f"sent {name} to process {pid}")


def group_refusal(processes, *, owner_only: bool = False) -> str | None:
    """Why a group may not be signalled: the first of its processes that may not be (the
    single-process rules, each); None if every one may. All or none: a job half-stopped is
    worse than one left running."""
    for p in processes:
        pid = local_pid(p)
        if pid is None:
            return (f"process {p.pid} is outside gputop's PID namespace: run gputop on the host "
                    "(or with --pid=host) to signal it")
        reason = refusal(pid, p.started, owner_only=owner_only)
        if reason is not None:
            return reason
    return None


def send_group(processes, name: str, *, owner_only: bool = False) -> Outcome:
    """``name`` to each process; one outcome that names what failed."""
    outcomes = [send(local_pid(p) or p.pid, name, p.started, owner_only=owner_only)
                for p in processes]
    failed = [o.message for o in outcomes if not o.ok]
    if failed:
        return Outcome(False, f"{name} to {len(outcomes) - len(failed)} of {len(outcomes)} "
                       "processes; " + "; ".join(failed), "error")
    pids = ", ".join(str(p.pid) for p in processes)
    return Outcome(True, f"sent {name} to {len(outcomes)} processes ({pids})")
