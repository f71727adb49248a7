"""Who owns a process, from the kernel's own files: pure parsers, no I/O.

- ``/proc/PID/cgroup`` (cgroup v1: one ``N:controllers:/path`` line per hierarchy; v2: one
  ``0::/path`` line) names the container runtime, the Kubernetes pod and the Slurm job step,
  because every one of them files its processes under cgroup paths of its own shape.
- ``/proc/PID/status``'s ``NSpid`` gives the PID in each nested PID namespace, outermost first.
- ``/proc/PID/environ``'s ``SLURM_JOB_ID`` covers Slurm set up without cgroups.

The shapes recognised are those of real captures (tests/fixtures/cgroup/SOURCES.md).
"""

from __future__ import annotations

import re

from gputop.core.model import Container, Job

# Container ids are hex: 64 digits from docker, containerd, CRI-O and podman (shorter ones seen
# with custom cgroup parents).
_ID = r"[0-9a-f]{12,64}"

# Leaf names a runtime gives a container's cgroup, systemd driver ("…-<id>.scope"), containerd's
# systemd form on cgroup v1 ("…slice:cri-containerd:<id>") and the cgroupfs driver ("docker/<id>").
# Each with a word it cannot match without, tried first: a substring test costs a fraction of
# a pattern search, and a path holds one runtime's word at most.
_LEAVES = (
    ("docker-", re.compile(rf"(?:^|/)docker-({_ID})\.scope(?:/|$)"), "docker"),
    ("cri-containerd-", re.compile(rf"(?:^|/)cri-containerd-({_ID})\.scope(?:/|$)"),
     "containerd"),
    ("crio-", re.compile(rf"(?:^|/)crio-({_ID})\.scope(?:/|$)"), "cri-o"),
    ("libpod-", re.compile(rf"(?:^|/)libpod-({_ID})(?:\.scope)?(?:/|$)"), "podman"),
    (":cri-containerd:", re.compile(rf":cri-containerd:({_ID})$"), "containerd"),
    (":crio:", re.compile(rf":crio:({_ID})$"), "cri-o"),
    (":docker:", re.compile(rf":docker:({_ID})$"), "docker"),
    ("docker/", re.compile(rf"(?:^|/)docker/({_ID})(?:/|$)"), "docker"),
)
# LXC names its cgroups after the container: /lxc/NAME (LXC < 3.1), /lxc.payload/NAME and
# /lxc.payload.NAME (LXC 4 flattened them).
_LXC = re.compile(r"(?:^|/)lxc(?:\.payload)?[./]([^/]+)")
# Kubernetes, cgroupfs driver: /kubepods[/QOS]/pod<uid>/<container id>.
_POD_CGROUPFS = re.compile(rf"(?:^|/)kubepods(?:/[a-z]+)?/pod([0-9a-f-]{{36}})(?:/({_ID}))?")
# systemd driver: kubepods[-QOS]-pod<uid with _ for ->.slice (systemd reserves '-').
_POD_SYSTEMD = re.compile(r"kubepods(?:-[a-z]+)?-pod([0-9a-f_]{36})\.slice")

# Slurm. v1: /slurm[_NODE]/uid_U/job_J[/step_S]; v2: /…slurmstepd.scope/job_J[/step_S]
# (NODE_slurmstepd.scope where slurmd was built for several slurmds per host, as Debian's is).
_SLURM_V1 = re.compile(r"(?:^|/)slurm(?:_[^/]+)?/uid_\d+/job_(\d+)(?:/step_([^/]+))?")
_SLURM_V2 = re.compile(r"(?:^|/)(?:[^/]*_)?slurmstepd\.scope/job_(\d+)(?:/step_([^/]+))?")


def cgroup_paths(text: str) -> list[str]:
    """The distinct paths of the lines of a ``/proc/PID/cgroup`` file (v1 and v2 lines alike;
    under cgroup v1 a container's path is repeated on every controller's line)."""
    out: dict[str, None] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[2]:
            out[parts[2]] = None
    return list(out)


# A word every container path above holds: most processes are the host's, and one search of
# the whole file tells them apart before any line is split or pattern tried.
_CONTAINER_WORD = re.compile(r"docker|containerd|crio|libpod|kubepods|lxc")


def container_from_path(path: str) -> Container | None:
    if not _CONTAINER_WORD.search(path):
        return None
    pod_uid = None
    m = _POD_SYSTEMD.search(path) if "kubepods" in path else None
    if m:
        pod_uid = m.group(1).replace("_", "-")
    elif "kubepods" in path:
        m = _POD_CGROUPFS.search(path)
        if m:
            pod_uid = m.group(1)
            if m.group(2):  # the cgroupfs driver names the leaf by id alone, not by runtime
                runtime, cid = _runtime_leaf(path) or (None, m.group(2))
                return Container(runtime=runtime, id=cid, pod_uid=pod_uid)
    leaf = _runtime_leaf(path)
    if leaf is not None:
        return Container(runtime=leaf[0], id=leaf[1], pod_uid=pod_uid)
    if pod_uid is not None:
        return Container(pod_uid=pod_uid)
    m = _LXC.search(path) if "lxc" in path else None
    if m and m.group(1) not in ("monitor", "pivot") and not m.group(1).startswith("monitor."):
        return Container(runtime="lxc", id=m.group(1), name=m.group(1))
    return None


def _runtime_leaf(path: str) -> tuple[str, str] | None:
    """(runtime, container id) from a path's leaf, or None."""
    for word, pattern, runtime in _LEAVES:
        if word in path:
            m = pattern.search(path)
            if m:
                return runtime, m.group(1)
    return None


def _specificity(c: Container) -> int:
    return (c.id is not None) * 2 + (c.pod_uid is not None)


def parse_container(text: str) -> Container | None:
    """The container a ``/proc/PID/cgroup`` file places its process in, or None (the host).

    cgroup v1 lines may disagree (a controller left at a parent); the most specific answer
    wins: a container id over a bare pod."""
    if not _CONTAINER_WORD.search(text):
        return None
    best: Container | None = None
    for path in cgroup_paths(text):
        found = container_from_path(path)
        if found is not None and (best is None or _specificity(found) > _specificity(best)):
            best = found
    return best


def parse_slurm_cgroup(text: str) -> Job | None:
    """The Slurm job (and step) a ``/proc/PID/cgroup`` file places its process in."""
    if "slurm" not in text:
        return None
    best: Job | None = None
    for path in cgroup_paths(text):
        if "slurm" not in path:
            continue
        m = _SLURM_V2.search(path) or _SLURM_V1.search(path)
        if m and (best is None or (best.step is None and m.group(2) is not None)):
            best = Job(scheduler="slurm", id=m.group(1), step=m.group(2))
    return best


def _environ_value(data: bytes, key: bytes) -> bytes | None:
    """The value of ``key`` in a NUL-separated environment: found by a plain search (an
    environment is dozens of variables and nearly always lacks the key), at a variable's start."""
    head = key + b"="
    at = data.find(head)
    while at > 0 and data[at - 1] != 0:  # inside another variable (OLD_SLURM_JOB_ID=…)
        at = data.find(head, at + 1)
    if at < 0:
        return None
    end = data.find(b"\0", at)
    return data[at + len(head): end if end >= 0 else None]


def parse_slurm_environ(data: bytes) -> Job | None:
    """``SLURM_JOB_ID`` (and ``SLURM_STEP_ID``) from a NUL-separated ``/proc/PID/environ``."""
    job = _environ_value(data, b"SLURM_JOB_ID")
    if not job or not job.isdigit():
        return None
    step = _environ_value(data, b"SLURM_STEP_ID")
    return Job(scheduler="slurm", id=job.decode("ascii"),
               step=step.decode("ascii", "replace") if step else None)


def _status_field(status: str, key: str) -> str | None:
    """The value of one ``Key:`` line of ``/proc/PID/status``, found at a line's start (a Name
    may hold anything), without splitting the whole file into lines."""
    head = key + ":"
    if status.startswith(head):
        at = 0
    else:
        at = status.find("\n" + head) + 1
        if not at:
            return None
    end = status.find("\n", at)
    return status[at + len(head): end if end >= 0 else None]


def parse_nspid(status: str) -> tuple[int, ...]:
    """``NSpid`` of ``/proc/PID/status``: the PID in each PID namespace, outermost first
    (as seen from the namespace of the /proc it was read from). Empty where the kernel has no
    such line (before 4.1)."""
    value = _status_field(status, "NSpid")
    try:
        return tuple(map(int, value.split())) if value else ()
    except ValueError:
        return ()


def parse_uid(status: str) -> int | None:
    """The real user id, first of ``Uid`` in ``/proc/PID/status``; None where there is none."""
    uids = parse_uids(status)
    return uids[0] if uids else None


def parse_uids(status: str) -> tuple[int, int, int] | None:
    """The real, effective and saved user ids of ``Uid`` in ``/proc/PID/status`` (psutil's
    ``uids()``); None where the line is missing or malformed."""
    fields = (_status_field(status, "Uid") or "").split()
    if len(fields) < 3 or not all(f.isdigit() for f in fields[:3]):
        return None
    return int(fields[0]), int(fields[1]), int(fields[2])


def parse_ppid(status: str) -> int | None:
    """``PPid`` of ``/proc/PID/status``: the parent, 0 for a namespace's init; None if absent."""
    value = (_status_field(status, "PPid") or "").strip()
    return int(value) if value.isdigit() else None


def parse_stat_comm_ppid(stat: bytes) -> tuple[str, int] | None:
    """The command name and parent of a ``/proc/PID/stat`` line (``PID (COMM) STATE PPID …``;
    the name may hold spaces and parentheses, so it ends at the last ``)``)."""
    open_at, close_at = stat.find(b"("), stat.rfind(b")")
    fields = stat[close_at + 1:].split(None, 2)
    if open_at < 0 or close_at < open_at or len(fields) < 2 or not fields[1].isdigit():
        return None
    return stat[open_at + 1: close_at].decode("utf-8", "replace"), int(fields[1])
