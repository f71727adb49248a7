"""Host-side facts about the processes a device reports: user, command line, CPU%, RSS, start,
and who owns them (container, pod, Slurm job, PID in their own namespace: ``attribution.py``).

CPU% is measured between two ticks, so an entry is kept per pid across ticks; static facts
(user, name, command, start time, owner) are read once per process, that is per (PID, start
time). A pid that vanished gives ``GONE`` (the device lists a process the host no longer has) and
one we may not inspect ``NO_FACTS``: ``None`` fields, never an error. Everything is read from
/proc here, as psutil reads it (name and command line as psutil gives them), without psutil: the
dashboard's first screen does not load it (about 1 MB and 10 ms of start-up). The per-tick facts
come from one read of ``/proc/PID/stat`` (CPU time, RSS and start time are all in it) rather than
psutil's two files and bookkeeping: the process table's refresh was over a third of the
dashboard's CPU.

Names and command lines are whatever bytes their process chose; bytes that are not UTF-8 (kept
as lone surrogates by ``os.fsdecode`` and ``pwd``) become U+FFFD here, so the model holds valid Unicode
that JSON, CSV and the exporter can encode. Control characters are kept: every output shows
them made visible (``gputop.core.visible``).

Where gputop runs in a PID namespace whose /proc cannot look up host PIDs (a container without
``--pid=host``), ``lookup_device`` maps a device's PIDs to visible processes where the kernel
leaves one answer (``pidns.py``) and marks the others ``outside_pid_namespace``.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gputop.core.model import Process
from gputop.core.units import MIB
from gputop.core.visible import valid_unicode
from gputop.host import load, pidns
from gputop.host.attribution import NO_OWNER, Attribution, Owner
from gputop.host.owners import parse_uid

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
BOOT_TIME_TTL_S = 1.0  # about one tick
RESCAN_S = 5.0  # how often unmatched PIDs of a GPU send us looking for /dev/nvidiaN holders


@dataclass(slots=True)
class HostFacts:
    user: str | None = None
    name: str | None = None
    command: str | None = None
    started: float | None = None
    cpu_pct: float | None = None
    host_memory_mib: float | None = None
    owner: Owner = NO_OWNER
    outside_pid_namespace: bool = False
    gone: bool = False  # no such process on the host (it exited after the device listed it)

    def process(self, pid: int, *, name: str | None = None, **device: Any) -> Process:
        """Return the model's row of ``pid``: these host facts (user, command, times, owner,
        namespace, gone) beside what the device says of it (``device``: memory, SM%, type, MIG
        instance). ``name`` stands in where the host has none (a tool's name for it). Every
        backend builds its rows here, so a fact the host learns reaches every vendor's table."""
        owner = self.owner
        return Process(pid=pid, user=self.user, name=self.name or name, command=self.command,
                       cpu_pct=self.cpu_pct, host_memory_mib=self.host_memory_mib,
                       started=self.started, container=owner.container, job=owner.job,
                       namespace_pid=owner.namespace_pid,
                       outside_pid_namespace=self.outside_pid_namespace, gone=self.gone, **device)


class _Entry:
    __slots__ = ("facts", "start_ticks", "cpu_ticks", "read_at")

    def __init__(self, facts: HostFacts, start_ticks: int) -> None:
        self.facts = facts
        self.start_ticks = start_ticks  # /proc/PID/stat's start time: a new one is a new process
        self.cpu_ticks: int | None = None  # at the last read; None until there is one
        self.read_at = 0.0


def stat_fields(pid: int) -> list[bytes]:
    """The fields of ``/proc/PID/stat`` after the command name, the state letter first (field
    N of proc(5) at index N - 3). Raises OSError (FileNotFoundError: no such process)."""
    # os.open/os.read, not open(): no buffered file object per process and tick (8 µs, not 14)
    fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, 4096)  # one line of well under 1 KiB: 52 numbers and a 16-byte name
    finally:
        os.close(fd)
    # after the command name, which may itself hold spaces and parentheses
    return data[data.rindex(b")") + 2:].split()


def read_stat(pid: int) -> tuple[int, int, int]:
    """(start time, user+system CPU time, resident pages) of ``pid`` from ``/proc/PID/stat``,
    the first two in clock ticks. Raises OSError (FileNotFoundError: no such process)."""
    fields = stat_fields(pid)
    return int(fields[19]), int(fields[11]) + int(fields[12]), int(fields[21])


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _read_if_allowed(path: str) -> bytes | None:
    """``path``'s bytes, or None where the file is there but not ours to read (a command line
    under ``hidepid``, or another user's); a missing one still raises: the process is gone."""
    try:
        return _read(path)
    except (FileNotFoundError, ProcessLookupError):
        raise
    except OSError:
        return None


def command_line(data: bytes) -> list[str]:
    """The arguments in /proc/PID/cmdline, split as psutil splits them: on NULs, or on spaces
    where the process rewrote its command line without them (setproctitle: ``nginx: worker``)."""
    text = os.fsdecode(data)
    if not text:  # kernel threads and zombies
        return []
    sep = "\x00" if text.endswith("\x00") else " "
    text = text.removesuffix(sep)
    args = text.split(sep)
    if sep == "\x00" and len(args) == 1 and " " in text:  # one NUL, at the end, after spaces
        args = text.split(" ")
    return args


def full_name(comm: str, args: list[str]) -> str:
    """The name in /proc/PID/stat, which the kernel cuts to 15 bytes, completed from the command
    line's first word where that starts with it (``gnome-keyring-d``: ``gnome-keyring-daemon``),
    as psutil's ``name()`` does."""
    if len(comm) >= 15 and args:
        longer = os.path.basename(args[0])
        if longer.startswith(comm):
            return longer
    return comm


NO_FACTS = HostFacts()
OUTSIDE = HostFacts(outside_pid_namespace=True)
GONE = HostFacts(gone=True)


def _gone(pid: int) -> bool:
    """Whether no process ``pid`` exists, asked of the kernel (signal 0 sends nothing): its
    /proc entry may be missing for one that runs, under a ``hidepid`` mount of /proc, and such a
    process is not gone but hidden from us."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # EPERM: it exists, and is someone else's
        return False
    return False


@dataclass(frozen=True)
class DevicePaths:
    """Where the NVIDIA driver's files are (tests point these at their own)."""

    driver_info: str = "/proc/driver/nvidia/gpus"
    device_node: str = "/dev/nvidia{minor}"


class HostProcesses:
    """A per-pid cache of static facts and of the last CPU time read."""

    def __init__(self, attribution: Attribution | None = None,
                 pid_view: pidns.PidView | None = None,
                 devices: DevicePaths | None = None) -> None:
        self._entries: dict[int, _Entry] = {}
        self.attribution = (attribution if attribution is not None
                            else Attribution(pid_view=pid_view))
        self._devices = devices or DevicePaths()
        self._mapped: dict[int, int] = {}  # host PID -> PID here, inside a PID namespace
        self._next_scan: dict[str | None, float] = {}
        self._users: dict[int, str] = {}
        self._boot: tuple[float, float] | None = None  # (when read, boot time)

    @property
    def pid_view(self) -> pidns.PidView:
        return self.attribution.pid_view

    def lookup_device(self, pci_bus_id: str | None, pids: Iterable[int]) -> dict[int, HostFacts]:
        """Facts for the PIDs one device reports (host PIDs, as NVML gives them)."""
        if self.pid_view.host_pids_resolve:
            return {pid: self.lookup(pid) for pid in pids}
        out: dict[int, HostFacts] = {}
        unmatched = set()
        for pid in pids:
            local = self._mapped.get(pid)
            facts = self.lookup(local, host_pid=pid) if local is not None else NO_FACTS
            if facts is NO_FACTS or facts.gone:  # never mapped, or the mapped process is gone
                self._mapped.pop(pid, None)
                unmatched.add(pid)
            out[pid] = facts
        if unmatched:
            for pid in unmatched:
                out[pid] = OUTSIDE
            self._map_holder(pci_bus_id, unmatched, out)
        return out

    def _map_holder(self, pci_bus_id: str | None, unmatched: set[int],
                    out: dict[int, HostFacts]) -> None:
        now = time.monotonic()
        if now < self._next_scan.get(pci_bus_id, 0.0) or len(unmatched) != 1:
            return
        self._next_scan[pci_bus_id] = now + RESCAN_S
        minor = pidns.device_minor(pci_bus_id, self._devices.driver_info)
        if minor is None:
            return
        path = self._devices.device_node.format(minor=minor)
        taken = set(self._mapped.values())
        candidates = pidns.holders(path, self.attribution.places.proc,
                                   skip=(os.getpid(), *taken)) - taken
        match = pidns.sole_match(unmatched, candidates)
        if match is None:
            return
        host_pid, local = match
        facts = self.lookup(local, host_pid=host_pid)
        if facts is not NO_FACTS and not facts.gone:
            self._mapped[host_pid] = local
            self._next_scan.pop(pci_bus_id, None)
            out[host_pid] = facts

    def lookup(self, pid: int, host_pid: int | None = None) -> HostFacts:
        """Fresh dynamic facts (CPU%, RSS) and cached static ones for ``pid``; ``host_pid`` is
        the PID a device reports for it, where that differs (inside a PID namespace). GONE where
        no process ``pid`` exists; NO_FACTS where it exists but may not be read."""
        entry = self._entries.get(pid)
        try:
            start_ticks, cpu_ticks, rss_pages = read_stat(pid)
        except (FileNotFoundError, ProcessLookupError):
            self._entries.pop(pid, None)
            return GONE if _gone(pid) else NO_FACTS
        except (OSError, ValueError, IndexError):
            # a stat we may not read: the facts we have, and none made up for a new process
            return entry.facts if entry is not None else NO_FACTS
        if entry is None or start_ticks != entry.start_ticks:  # new, or the pid was reused
            opened = self._open(pid, host_pid, start_ticks)
            if isinstance(opened, HostFacts):
                return opened
            entry = opened
        facts = entry.facts
        now = time.monotonic()
        if entry.cpu_ticks is not None and now > entry.read_at:
            # as psutil's cpu_percent: % of one CPU since the last read, 0.1 steps
            used = (cpu_ticks - entry.cpu_ticks) / CLK_TCK
            facts.cpu_pct = round(100.0 * used / (now - entry.read_at), 1)
        entry.cpu_ticks, entry.read_at = cpu_ticks, now
        facts.host_memory_mib = round(rss_pages * PAGE_SIZE / MIB, 1)
        return facts

    def _open(self, pid: int, host_pid: int | None, start_ticks: int) -> _Entry | HostFacts:
        """The static facts of a process first seen (``start_ticks`` from the stat just read),
        or what to give instead: GONE where it exited since that read, NO_FACTS where it runs
        but may not be read."""
        self._entries.pop(pid, None)
        facts = HostFacts()
        try:
            # what psutil's create_time() gives, without its read of /proc/stat per process
            facts.started = start_ticks / CLK_TCK + self._boot_time()
        except (OSError, ValueError):
            return NO_FACTS
        try:
            stat = _read(f"/proc/{pid}/stat")
            cmdline = _read_if_allowed(f"/proc/{pid}/cmdline")
        except (FileNotFoundError, ProcessLookupError):  # exited since the stat read
            return GONE
        except OSError:
            return NO_FACTS
        args = command_line(cmdline) if cmdline is not None else []
        facts.name = full_name(os.fsdecode(stat[stat.find(b"(") + 1:stat.rfind(b")")]), args)
        if facts.name:
            facts.name = valid_unicode(facts.name)
        if args:
            facts.command = valid_unicode(" ".join(args))
        elif facts.name:
            facts.command = facts.name  # kernel threads and zombies have no command line
        # The status file names the user (its Uid) and the namespace PID (attribution): read
        # once for both, where psutil would read it again for the user.
        status = self.attribution.status(pid)
        facts.user = self._user(parse_uid(status))
        facts.owner = self.attribution.owner(pid, host_pid, status)
        entry = _Entry(facts, start_ticks)
        self._entries[pid] = entry
        return entry

    def _boot_time(self) -> float:
        """The boot time that start ticks count from (psutil's ``create_time()`` adds it),
        read from /proc/stat (a file of one line per CPU). It moves only when the wall clock is
        stepped, so it is read again at most once per BOOT_TIME_TTL_S: a tick's batch of new
        processes shares one read."""
        now = time.monotonic()
        if self._boot is None or now - self._boot[0] > BOOT_TIME_TTL_S:
            self._boot = (now, load.boot_time(_read("/proc/stat").decode("ascii", "replace")))
        return self._boot[1]

    def _user(self, uid: int | None) -> str | None:
        """The login name of ``uid`` (its number where the passwd database has none, as ps
        shows it), looked up once per uid: 256 new processes are a handful of users."""
        if uid is None:
            return None
        if uid not in self._users:
            try:
                self._users[uid] = valid_unicode(pwd.getpwuid(uid).pw_name)
            except KeyError:
                self._users[uid] = str(uid)
        return self._users[uid]

    def prune(self, live: Iterable[int]) -> None:
        """Forget pids no device reports any more."""
        keep = set(live)
        for host_pid in [p for p in self._mapped if p not in keep]:
            del self._mapped[host_pid]
        keep.update(self._mapped.values())
        for pid in [p for p in self._entries if p not in keep]:
            del self._entries[pid]

