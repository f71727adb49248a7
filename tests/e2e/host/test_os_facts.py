"""The kernel's facts of real processes (a niced child in a folder of its own, a zombie, one whose
folder was removed, every process on this host) are those psutil reads, or None where psutil may
not read them: never a value made up."""

from __future__ import annotations

import os
import subprocess
import time

import psutil

from gputop.host import os_facts
from tests.support import procs


def _asleep(child: subprocess.Popen, name: str) -> None:
    """Wait until ``child`` sleeps in ``name`` (Popen returns before the exec, and a process
    just exec'd is running for a moment): facts that stand still, to compare."""
    for _ in range(500):
        proc = psutil.Process(child.pid)
        if proc.name() == name and proc.status() == psutil.STATUS_SLEEPING:
            return
        time.sleep(0.01)
    raise AssertionError(f"{child.pid} never ran {name}")


def test_a_niced_sleeping_child_in_its_own_folder(tmp_path) -> None:
    child = subprocess.Popen(["nice", "-n", "7", "sleep", "30"], cwd=tmp_path)
    try:
        _asleep(child, "sleep")
        ours, theirs = os_facts.read(child.pid), psutil.Process(child.pid)
        assert (ours.status, ours.threads, ours.parent, ours.nice, ours.cwd, ours.started) == (
            theirs.status(), theirs.num_threads(), theirs.ppid(), theirs.nice(), theirs.cwd(),
            theirs.create_time())
        niced = min(19, os.nice(0) + 7)  # 7 above this test's own (a niced pytest's too)
        assert (ours.status, ours.nice, ours.cwd) == ("sleeping", niced, str(tmp_path))
    finally:
        child.kill()
        child.wait()


def test_a_removed_folder_is_named_without_the_kernels_mark(tmp_path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    child = subprocess.Popen(["sleep", "30"], cwd=gone)
    try:
        _asleep(child, "sleep")
        gone.rmdir()
        assert os_facts.read(child.pid).cwd == psutil.Process(child.pid).cwd() == str(gone)
    finally:
        child.kill()
        child.wait()


def test_a_zombie_says_so_and_has_no_working_directory() -> None:
    child = procs.zombie()
    try:
        facts = os_facts.read(child.pid)
        assert facts.status == "zombie" and facts.cwd is None
        assert facts.parent == psutil.Process(child.pid).ppid()
    finally:
        child.wait()


def test_every_process_here_reads_as_psutil_reads_it() -> None:
    """Whatever this host runs: another user's, root's, kernel threads; a working directory
    psutil may not read (AccessDenied, a zombie's) is None here. A process whose facts moved
    while they were read (ours before and after psutil's differ) is not compared."""
    compared = 0
    for proc in psutil.process_iter():
        try:
            before = os_facts.read(proc.pid)
            with proc.oneshot():
                try:
                    cwd = proc.cwd()
                except (psutil.AccessDenied, psutil.ZombieProcess):
                    cwd = None
                theirs = os_facts.OsFacts(
                    started=proc.create_time(), status=proc.status(),
                    threads=proc.num_threads(), parent=proc.ppid(), nice=proc.nice(), cwd=cwd)
            after = os_facts.read(proc.pid)
        except (psutil.NoSuchProcess, FileNotFoundError, ProcessLookupError):
            continue  # ended while it was read
        if before == after:
            assert after == theirs
            compared += 1
    assert compared >= 3  # init, this test's parent, sleeping processes at least
