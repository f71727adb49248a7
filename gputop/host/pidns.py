"""PID namespaces: whether the PIDs a device reports mean anything here, and mapping them if not.

NVML reports host PIDs (the driver has no PID namespaces). Run in a container with its own PID
namespace, a host PID names no process here, or, worse, a different one. gputop therefore asks
the kernel which namespace it runs in and, where the host's PIDs cannot be looked up, maps a
device's PIDs to visible processes only where the kernel's facts leave one answer: the single
visible process holding ``/dev/nvidiaN`` open when a single PID of GPU N is unmatched. The rest
stay what they are: a host PID and its memory, outside this namespace.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

# The initial PID namespace's inode number: PROC_PID_INIT_INO in include/linux/proc_ns.h.
INIT_PID_NS_INODE = 0xEFFFFFFC


def _ns_inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:  # no such process, or not ours to inspect (ptrace rules)
        return None


@dataclass(frozen=True)
class PidView:
    """How this process sees host PIDs."""

    in_host_namespace: bool  # gputop itself runs in the initial PID namespace
    proc_is_host: bool  # the /proc it reads is the initial namespace's (host PIDs resolve)

    @property
    def host_pids_resolve(self) -> bool:
        return self.in_host_namespace or self.proc_is_host


def detect(proc: str = "/proc") -> PidView:
    own = _ns_inode(f"{proc}/thread-self/ns/pid") or _ns_inode(f"{proc}/self/ns/pid")
    if own is None:  # a kernel without namespaces (or no /proc): nothing to map
        return PidView(True, True)
    if own == INIT_PID_NS_INODE:
        return PidView(True, True)
    # PID 1 of a /proc lives in that /proc's namespace; the host's /proc shows the host's init.
    # Where the kernel will not let us look (ptrace rules), the answer is no: never guessed.
    return PidView(False, _ns_inode(f"{proc}/1/ns/pid") == INIT_PID_NS_INODE)


def device_minor(pci_bus_id: str | None,
                 driver_dir: str = "/proc/driver/nvidia/gpus") -> int | None:
    """The /dev/nvidiaN number of a GPU, from the driver's own information file.

    NVML writes bus ids with an 8-digit domain (``00000000:18:00.0``); the driver's folder uses 4
    (``0000:18:00.0``), lower case."""
    if not pci_bus_id:
        return None
    domain, sep, rest = pci_bus_id.lower().partition(":")
    if not sep:
        return None
    folder = f"{domain[-4:].rjust(4, '0')}:{rest}"
    try:
        with open(f"{driver_dir}/{folder}/information") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "Device Minor":
                    return int(value.strip())
    except (OSError, ValueError):
        return None
    return None


def holders(path: str, proc: str = "/proc", skip: Iterable[int] = ()) -> set[int]:
    """PIDs (as this /proc numbers them) of the visible processes holding ``path`` open."""
    skipped = set(skip)
    out: set[int] = set()
    try:
        entries = os.listdir(proc)
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid in skipped:
            continue
        fd_dir = f"{proc}/{entry}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{fd_dir}/{fd}") == path:
                    out.add(pid)
                    break
            except OSError:
                continue
    return out


def sole_match(unmatched: set[int], candidates: set[int]) -> tuple[int, int] | None:
    """(host PID, local PID) when exactly one PID is unmatched and one process is a candidate."""
    if len(unmatched) == 1 and len(candidates) == 1:
        return next(iter(unmatched)), next(iter(candidates))
    return None
