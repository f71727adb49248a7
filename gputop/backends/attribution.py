"""Who owns a GPU process: its container (and pod), its Slurm job, its PID in its own namespace.

Read from the kernel's files for the process (``/proc/PID/cgroup``, ``status``, ``environ``;
parsed in ``owners.py``) and, for names, from files that the runtimes keep on the node: Docker's
``containers/<id>/config.v2.json`` and the kubelet's ``/var/log/pods/<namespace>_<pod>_<uid>`` and
``/var/log/containers/<pod>_<namespace>_<container>-<id>.log``. No container engine is ever
asked (no socket, no API call): a hung dockerd cannot stall a tick. The caller reads a process
once per (PID, start time); names are cached per container id and pod uid.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace

from gputop.backends.owners import (
    parse_container,
    parse_nspid,
    parse_slurm_cgroup,
    parse_slurm_environ,
)
from gputop.model import Container, Job

MAX_CONFIG_BYTES = 4 * 1024 * 1024  # a config.v2.json is a few KiB; never read a huge one


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


def _read(path: str, mode: str = "r", limit: int = -1):
    try:
        with open(path, mode, buffering=0 if mode == "rb" else -1) as f:
            return f.read(limit)
    except OSError:  # gone, or not ours to read (environ of another user's process)
        return None


class Attribution:
    def __init__(self, places: Places | None = None) -> None:
        self.places = places or Places()
        self._docker_names: dict[str, str | None] = {}
        self._pods: dict[str, tuple[str, str] | None] = {}  # uid -> (namespace, name)
        self._pod_containers: dict[str, str | None] = {}  # container id -> container name

    def owner(self, pid: int, host_pid: int | None = None) -> Owner:
        """Facts for the process this /proc calls ``pid``; ``host_pid`` is the PID the device
        reports for it, where gputop runs in another PID namespace (default: ``pid``)."""
        base = f"{self.places.proc}/{pid}"
        cgroup = _read(f"{base}/cgroup") or ""
        container = parse_container(cgroup)
        if container is not None:
            container = self._named(container)
        job = parse_slurm_cgroup(cgroup)
        if job is None:
            environ = _read(f"{base}/environ", "rb")
            if environ:
                job = parse_slurm_environ(environ)
        ns_pid = None
        nspid = parse_nspid(_read(f"{base}/status") or "")
        reported = pid if host_pid is None else host_pid
        if nspid and nspid[-1] != reported:
            ns_pid = nspid[-1]
        if container is None and job is None and ns_pid is None:
            return NO_OWNER
        return Owner(container, job, ns_pid)

    # ------------------------------------------------------------------ names
    def _named(self, c: Container) -> Container:
        if c.pod_uid is not None:
            pod = self._pod(c.pod_uid)
            name = self._pod_container(c.id) if c.id else None
            if pod is not None:
                return replace(c, pod_namespace=pod[0], pod=pod[1], name=name)
            return replace(c, name=name) if name else c
        if c.runtime == "docker" and c.id and c.name is None:
            return replace(c, name=self._docker_name(c.id))
        return c

    def _docker_name(self, cid: str) -> str | None:
        if cid not in self._docker_names:
            name = None
            text = _read(f"{self.places.docker}/containers/{cid}/config.v2.json",
                         limit=MAX_CONFIG_BYTES)
            if text:
                try:
                    raw = json.loads(text).get("Name")
                except (ValueError, AttributeError):
                    raw = None
                if isinstance(raw, str) and raw.strip("/"):
                    name = raw.strip("/")
            self._docker_names[cid] = name
        return self._docker_names[cid]

    def _pod(self, uid: str) -> tuple[str, str] | None:
        if uid not in self._pods:
            self._pods[uid] = None
            for entry in _listdir(self.places.pod_logs):
                # <namespace>_<pod>_<uid>: neither a namespace nor a pod name holds "_"
                parts = entry.split("_")
                if len(parts) == 3 and parts[2] == uid:
                    self._pods[uid] = (parts[0], parts[1])
                    break
        return self._pods[uid]

    def _pod_container(self, cid: str) -> str | None:
        if cid not in self._pod_containers:
            self._pod_containers[cid] = None
            suffix = f"-{cid}.log"
            for entry in _listdir(self.places.container_logs):
                if entry.endswith(suffix):
                    # <pod>_<namespace>_<container>-<id>.log
                    parts = entry[: -len(suffix)].split("_")
                    if len(parts) == 3:
                        self._pod_containers[cid] = parts[2]
                    break
        return self._pod_containers[cid]


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def short_id(cid: str | None) -> str | None:
    return cid[:12] if cid else None
