"""Real kernel objects for the attribution tests: cgroups named as each runtime names them (in a
test-owned folder of a writable hierarchy, removed afterwards), PID namespaces from
``unshare --pid --fork``, and real processes placed in them."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

V1_PIDS = Path("/sys/fs/cgroup/pids")
UNIFIED = Path("/sys/fs/cgroup")


def writable_hierarchy() -> Path:
    """A cgroup hierarchy root where this (root) test may create folders: the v1 ``pids``
    hierarchy where there is one, else the v2 unified root."""
    for root in (V1_PIDS, UNIFIED):
        if (root / "cgroup.procs").exists() and os.access(root, os.W_OK):
            return root
    raise RuntimeError("no writable cgroup hierarchy (the attribution tests need root)")


class Lab:
    def __init__(self) -> None:
        self.root = writable_hierarchy()
        self.top = self.root / f"gputop-test-{secrets.token_hex(4)}"
        self.folders: list[Path] = []
        self.children: list[subprocess.Popen] = []

    def cgroup(self, relative: str) -> Path:
        """Create ``top/relative`` (each level), remembering it for removal."""
        path = self.top
        for part in [""] + relative.strip("/").split("/"):
            path = path / part if part else path
            if not path.exists():
                path.mkdir()
                self.folders.append(path)
        return path

    def spawn(self, argv: list[str] | None = None, env: dict[str, str] | None = None,
              **kw) -> subprocess.Popen:
        proc = subprocess.Popen(argv or ["sleep", "120"], env=env, start_new_session=True, **kw)
        self.children.append(proc)
        return proc

    def place(self, pid: int, relative: str) -> str:
        folder = self.cgroup(relative)
        (folder / "cgroup.procs").write_text(str(pid))
        return "/" + str(folder.relative_to(self.root))

    def close(self) -> None:
        for proc in self.children:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        for folder in reversed(self.folders):
            for _ in range(50):  # a killed task leaves its cgroup a moment later
                try:
                    folder.rmdir()
                    break
                except OSError:
                    time.sleep(0.02)


def namespaced_child(lab: Lab) -> tuple[int, int]:
    """A ``sleep`` in a fresh PID namespace: (host PID, PID inside its namespace)."""
    outer = lab.spawn(["unshare", "--pid", "--fork", "sleep", "120"])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        kids = psutil.Process(outer.pid).children()
        if kids:
            host = kids[0].pid
            nspid = [line for line in Path(f"/proc/{host}/status").read_text().splitlines()
                     if line.startswith("NSpid:")][0].split()[1:]
            if len(nspid) > 1:
                return host, int(nspid[-1])
        time.sleep(0.01)
    raise RuntimeError("unshare started no child")


# Names itself as Slurm's step daemon (the kernel's comm, what /proc/PID/stat shows) and starts
# the step's process with the step's environment, as slurmstepd does; prints that child's PID.
STEP_DAEMON = ("import subprocess\n"
               "with open('/proc/self/comm', 'w') as f: f.write('slurmstepd')\n"
               "child = subprocess.Popen(['sleep', '600'])\n"
               "print(child.pid, flush=True)\n"
               "child.wait()\n")


def step_daemon_child(daemon: subprocess.Popen) -> int:
    """Return the PID the step daemon printed, once that child has exec'd ``sleep``: Popen
    returns before, and until then the child is a copy of the daemon (its comm says
    slurmstepd, and during the exec its environ reads empty)."""
    pid = int(daemon.stdout.readline())  # type: ignore[union-attr]
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}/comm").read_text().strip() != "sleep":
        if time.monotonic() > deadline:
            raise AssertionError(f"the step daemon's child {pid} never became sleep")
        time.sleep(0.005)
    return pid


@contextmanager
def slurm_step(job: str) -> Iterator[int]:
    """Run a ``sleep`` under a process named ``slurmstepd`` with ``SLURM_JOB_ID=job`` (so
    attribution names the job) for the block: yields its PID; both are killed after it, the
    child first, lest it outlive its parent."""
    import sys

    daemon = subprocess.Popen([sys.executable, "-c", STEP_DAEMON], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, SLURM_JOB_ID=job))
    pid = None
    try:
        pid = step_daemon_child(daemon)
        yield pid
    finally:
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        daemon.kill()
        daemon.wait(10)
        daemon.stdout.close()  # type: ignore[union-attr]


def step_child(lab: Lab, env: dict[str, str]) -> int:
    """A ``sleep`` started, with ``env``, by a process named ``slurmstepd``: its PID."""
    import sys

    daemon = lab.spawn([sys.executable, "-c", STEP_DAEMON], env=env, stdout=subprocess.PIPE,
                       text=True)
    return step_daemon_child(daemon)


# Real ids of the shapes Docker, CRI and Kubernetes give (hex container ids, a pod UID).
DOCKER_ID = "4f1c2d9e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d"
CRI_ID = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d"
POD_UID = "0125ec2f-b64a-4868-8f5b-94b56cbab864"


@pytest.fixture(name="lab")
def lab_fixture():
    """A Lab for one test, closed (its processes killed, its folders removed) after it."""
    lab = Lab()
    try:
        yield lab
    finally:
        lab.close()
