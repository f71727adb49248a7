"""Who owns a GPU process: its container (and pod), its Slurm job, its PID in its own namespace.

Read from the kernel's files for the process (``/proc/PID/cgroup``, ``status``, ``environ``;
parsed in ``owners.py``) and, for names, from files that the runtimes keep on the node: Docker's
``containers/<id>/config.v2.json`` and the kubelet's ``/var/log/pods/<namespace>_<pod>_<uid>`` and
``/var/log/containers/<pod>_<namespace>_<container>-<id>.log``. No container engine is ever
asked (no socket, no API call): a hung dockerd cannot stall a tick. The caller reads a process
once per (PID, start time); names are cached per container id and pod uid.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace

from gputop.core.model import Container, Job
from gputop.core.units import MIB
from gputop.core.visible import valid_unicode
from gputop.host import pidns
from gputop.host.owners import (
    parse_container,
    parse_nspid,
    parse_ppid,
    parse_slurm_cgroup,
    parse_slurm_environ,
    parse_stat_comm_ppid,
)

MAX_CONFIG_BYTES = 4 * MIB  # a config.v2.json is a few KiB; never read a huge one
MAX_PROC_BYTES = 16 * MIB  # an environ is bounded by the kernel's ARG_MAX; be safe
READ_CHUNK = 64 * 1024
STAT_BYTES = 4096  # /proc/PID/stat is one line of a few hundred bytes
STEP_DAEMON = "slurmstepd"
LINEAGE_TTL_S = 1.0  # about one tick: the new processes a tick finds share their ancestors
MAX_CACHED = 4096  # distinct cgroups or names kept; past that, start afresh (containers come and go)
MAX_LINEAGE = 512  # deeper than any real process tree; never loop on a torn read


@dataclass(frozen=True, slots=True)
class Owner:
    container: Container | None = None
    job: Job | None = None
    namespace_pid: int | None = None


NO_OWNER = Owner()


@dataclass(frozen=True)
class Places:
    """Where the node keeps what attribution reads (tests point these at their own folders)."""

    proc: str = "/proc"
    docker: str = "/var/lib/docker"
    pod_logs: str = "/var/log/pods"
    container_logs: str = "/var/log/containers"


def _read(path: str, limit: int = MAX_PROC_BYTES) -> bytes | None:
    """The file's bytes (at most ``limit``), or None where it is gone or not ours to read (the
    environ of another user's process). Plain os reads: a Python file object would cost more
    than the kernel's work for a /proc file. A read that returns less than it asked for is
    taken as the end, so a small file costs one read. That holds for the files read here: a
    regular file, /proc's ``cgroup``, ``status`` and ``stat`` (made whole at the first read)
    and ``environ`` (its read fills the buffer). It does not for /proc files of many records
    (``maps``, ``smaps``): never read those with this."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = []
        while limit > 0:
            want = min(READ_CHUNK, limit)
            chunk = os.read(fd, want)
            chunks.append(chunk)
            limit -= len(chunk)
            if len(chunk) < want:
                break
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _text(data: bytes | None) -> str:
    return data.decode("utf-8", "replace") if data else ""


class _StepLineage:
    """Whether a process descends from ``slurmstepd``, the parent of every Slurm job step.

    A job's processes are started by its step daemon, so outside that lineage a ``SLURM_JOB_ID``
    is only inherited text (the shell of an ``salloc`` on a login node, a variable exported by
    hand), and its environ need not be read. Asked of ``/proc/PID/stat`` up the parent chain;
    the ancestors a batch of new processes share (a launcher, a shell, sshd, init) are read once,
    and the verdicts kept for ``LINEAGE_TTL_S`` only, lest a PID be reused."""

    def __init__(self, proc: str, clock=time.monotonic) -> None:
        self.proc = proc
        self.clock = clock
        self._known: dict[int, bool] = {}
        self._since = clock()

    def under_step(self, ppid: int) -> bool:
        now = self.clock()
        if now - self._since > LINEAGE_TTL_S:
            self._known.clear()
            self._since = now
        walked = []
        pid, verdict = ppid, False
        while pid > 0:  # PID 0: above init and kthreadd, the chain's end
            if pid in self._known:
                verdict = self._known[pid]
                break
            walked.append(pid)
            found = parse_stat_comm_ppid(_read(f"{self.proc}/{pid}/stat", STAT_BYTES) or b"")
            if found is None or len(walked) > MAX_LINEAGE:
                verdict = True  # an ancestor went away mid-walk: unknown, so read the environ
                break
            comm, pid = found
            if comm == STEP_DAEMON:
                verdict = True
                break
        for seen in walked:
            self._known[seen] = verdict
        return verdict


class Attribution:
    def __init__(self, places: Places | None = None,
                 pid_view: pidns.PidView | None = None) -> None:
        self.places = places or Places()
        self._pid_view = pid_view
        self._lineage = _StepLineage(self.places.proc)
        self._by_cgroup: dict[bytes, tuple[Container | None, Job | None]] = {}
        self._docker_names: dict[str, str | None] = {}
        self._pods: dict[str, tuple[str, str] | None] = {}  # uid -> (namespace, name)
        self._pod_containers: dict[str, str | None] = {}  # container id -> container name

    @property
    def pid_view(self) -> pidns.PidView:
        """How this process sees host PIDs (asked of the kernel once)."""
        if self._pid_view is None:
            self._pid_view = pidns.detect(self.places.proc)
        return self._pid_view

    def status(self, pid: int) -> str:
        """``/proc/PID/status``, for a caller that needs it too (the user is its ``Uid``):
        read once, handed to :meth:`owner`."""
        return _text(_read(f"{self.places.proc}/{pid}/status"))

    def owner(self, pid: int, host_pid: int | None = None, status: str | None = None) -> Owner:
        """Facts for the process this /proc calls ``pid``; ``host_pid`` is the PID the device
        reports for it, where gputop runs in another PID namespace (default: ``pid``).

        One read of its cgroup file; its status file unless the caller has read it already; its
        environ only where the cgroup names no job and a Slurm step daemon started it."""
        base = f"{self.places.proc}/{pid}"
        if status is None:
            status = self.status(pid)
        container, job = self._placed(_read(f"{base}/cgroup") or b"")
        if job is None and self._maybe_in_step(status):
            environ = _read(f"{base}/environ")
            if environ:
                job = parse_slurm_environ(environ)
        ns_pid = None
        nspid = parse_nspid(status)
        reported = pid if host_pid is None else host_pid
        if nspid and nspid[-1] != reported:
            ns_pid = nspid[-1]
        if container is None and job is None and ns_pid is None:
            return NO_OWNER
        return Owner(container, job, ns_pid)

    def _placed(self, cgroup: bytes) -> tuple[Container | None, Job | None]:
        """The named container and the job a cgroup file's text places a process in, parsed
        once per distinct text: a container's or a job's processes, and all the host's, share
        one (the file's read is then most of what a new process costs)."""
        placed = self._by_cgroup.get(cgroup)
        if placed is None:
            text = _text(cgroup)
            container = parse_container(text)
            placed = (self._named(container) if container is not None else None,
                      parse_slurm_cgroup(text))
            _bounded(self._by_cgroup)[cgroup] = placed
        return placed

    def _maybe_in_step(self, status: str) -> bool:
        if not self.pid_view.host_pids_resolve:
            return True  # a namespace's /proc ends the chain at its own init: cannot tell
        ppid = parse_ppid(status)
        return ppid is None or self._lineage.under_step(ppid)

    # ------------------------------------------------------------------ names
    def _named(self, c: Container) -> Container:
        if c.pod_uid is not None:
            pod = self._pod(c.pod_uid)
            name = self._pod_container(c.id) if c.id else None
            if pod is not None:
                return replace(c, pod_namespace=pod[0], pod=pod[1], name=name)
            return replace(c, name=name) if name else c
        if c.runtime == "docker" and c.id and c.name is None:
            name = self._docker_name(c.id)
            return replace(c, name=name) if name else c
        return c

    def _docker_name(self, cid: str) -> str | None:
        if cid not in self._docker_names:
            name = None
            text = _read(f"{self.places.docker}/containers/{cid}/config.v2.json",
                         MAX_CONFIG_BYTES)
            if text:
                import json  # here: only a node with Docker containers on its GPUs needs it

                try:
                    raw = json.loads(text).get("Name")
                except (ValueError, AttributeError):
                    raw = None
                if isinstance(raw, str) and raw.strip("/"):
                    name = valid_unicode(raw.strip("/"))  # JSON may spell a lone surrogate
            _bounded(self._docker_names)[cid] = name
        return self._docker_names[cid]

    def _pod(self, uid: str) -> tuple[str, str] | None:
        if uid not in self._pods:
            _bounded(self._pods)[uid] = None
            for entry in _listdir(self.places.pod_logs):
                # <namespace>_<pod>_<uid>: neither a namespace nor a pod name holds "_"
                parts = entry.split("_")
                if len(parts) == 3 and parts[2] == uid:
                    self._pods[uid] = (parts[0], parts[1])
                    break
        return self._pods[uid]

    def _pod_container(self, cid: str) -> str | None:
        if cid not in self._pod_containers:
            _bounded(self._pod_containers)[cid] = None
            suffix = f"-{cid}.log"
            for entry in _listdir(self.places.container_logs):
                if entry.endswith(suffix):
                    # <pod>_<namespace>_<container>-<id>.log
                    parts = entry[: -len(suffix)].split("_")
                    if len(parts) == 3:
                        self._pod_containers[cid] = parts[2]
                    break
        return self._pod_containers[cid]


def _bounded(cache: dict) -> dict:
    """``cache``, emptied first if it holds ``MAX_CACHED`` entries: a node that starts and ends
    containers for months must not grow its caches for months."""
    if len(cache) >= MAX_CACHED:
        cache.clear()
    return cache


def _listdir(path: str) -> list[str]:
    """The names in ``path`` (none where it cannot be listed), in valid Unicode: a file name's
    bytes that are not UTF-8 become U+FFFD, never the lone surrogates ``os.listdir`` keeps."""
    try:
        return [valid_unicode(name) for name in os.listdir(path)]
    except OSError:
        return []

