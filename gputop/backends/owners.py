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

from gputop.model import Container, Job

# Container ids are hex: 64 digits from docker, containerd, CRI-O and podman (shorter ones seen
# with custom cgroup parents).
_ID = r"[0-9a-f]{12,64}"

# Leaf names a runtime gives a container's cgroup, systemd driver ("…-<id>.scope"), containerd's
# systemd form on cgroup v1 ("…slice:cri-containerd:<id>") and the cgroupfs driver ("docker/<id>").
_LEAVES = (
    (re.compile(rf"(?:^|/)docker-({_ID})\.scope(?:/|$)"), "docker"),
    (re.compile(rf"(?:^|/)cri-containerd-({_ID})\.scope(?:/|$)"), "containerd"),
    (re.compile(rf"(?:^|/)crio-({_ID})\.scope(?:/|$)"), "cri-o"),
    (re.compile(rf"(?:^|/)libpod-({_ID})(?:\.scope)?(?:/|$)"), "podman"),
    (re.compile(rf":cri-containerd:({_ID})$"), "containerd"),
    (re.compile(rf":crio:({_ID})$"), "cri-o"),
    (re.compile(rf":docker:({_ID})$"), "docker"),
    (re.compile(rf"(?:^|/)docker/({_ID})(?:/|$)"), "docker"),
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
    """The path of each line of a ``/proc/PID/cgroup`` file (v1 and v2 lines alike)."""
    out = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[2]:
            out.append(parts[2])
    return out


_CONTAINER_WORDS = ("docker", "containerd", "crio", "libpod", "kubepods", "lxc")


def container_from_path(path: str) -> Container | None:
    if not any(word in path for word in _CONTAINER_WORDS):  # most paths: skip the patterns
        return None
    pod_uid = None
    m = _POD_SYSTEMD.search(path)
    if m:
        pod_uid = m.group(1).replace("_", "-")
    else:
        m = _POD_CGROUPFS.search(path)
        if m:
            pod_uid = m.group(1)
            if m.group(2):  # the cgroupfs driver names the leaf by id alone, not by runtime
                return _runtime_leaf(path) or Container(id=m.group(2), pod_uid=pod_uid)
    leaf = _runtime_leaf(path)
    if leaf is not None:
        return Container(runtime=leaf.runtime, id=leaf.id, pod_uid=pod_uid)
    if pod_uid is not None:
        return Container(pod_uid=pod_uid)
    m = _LXC.search(path)
    if m and m.group(1) not in ("monitor", "pivot") and not m.group(1).startswith("monitor."):
        return Container(runtime="lxc", id=m.group(1), name=m.group(1))
    return None


def _runtime_leaf(path: str) -> Container | None:
    for pattern, runtime in _LEAVES:
        m = pattern.search(path)
        if m:
            return Container(runtime=runtime, id=m.group(1))
    return None


def _specificity(c: Container) -> int:
    return (c.id is not None) * 2 + (c.pod_uid is not None)


def parse_container(text: str) -> Container | None:
    """The container a ``/proc/PID/cgroup`` file places its process in, or None (the host).

    cgroup v1 lines may disagree (a controller left at a parent); the most specific answer
    wins: a container id over a bare pod."""
    best: Container | None = None
    for path in cgroup_paths(text):
        found = container_from_path(path)
        if found is not None and (best is None or _specificity(found) > _specificity(best)):
            best = found
    return best


def parse_slurm_cgroup(text: str) -> Job | None:
    """The Slurm job (and step) a ``/proc/PID/cgroup`` file places its process in."""
    best: Job | None = None
    for path in cgroup_paths(text):
        if "slurm" not in path:
            continue
        m = _SLURM_V2.search(path) or _SLURM_V1.search(path)
        if m and (best is None or (best.step is None and m.group(2) is not None)):
            best = Job(scheduler="slurm", id=m.group(1), step=m.group(2))
    return best


def parse_slurm_environ(data: bytes) -> Job | None:
    """``SLURM_JOB_ID`` (and ``SLURM_STEP_ID``) from a NUL-separated ``/proc/PID/environ``."""
    job = step = None
    for item in data.split(b"\0"):
        if item.startswith(b"SLURM_JOB_ID="):
            job = item[13:].decode("ascii", "replace")
        elif item.startswith(b"SLURM_STEP_ID="):
            step = item[14:].decode("ascii", "replace")
    if not job or not job.isdigit():
        return None
    return Job(scheduler="slurm", id=job, step=step if step else None)


def parse_nspid(status: str) -> tuple[int, ...]:
    """``NSpid`` of ``/proc/PID/status``: the PID in each PID namespace, outermost first
    (as seen from the namespace of the /proc it was read from). Empty where the kernel has no
    such line (before 4.1)."""
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            try:
                return tuple(int(x) for x in line[6:].split())
            except ValueError:
                return ()
    return ()
