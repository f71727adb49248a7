"""Processes the tests start, looked at and ended by PID (imported by name, as `procs`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest


def sleeper(seconds: int = 60) -> subprocess.Popen:
    """Start a Python child that sleeps, returned once it runs its own script.

    Popen returns before the child has exec'd: a lookup in that moment sees the parent's name
    and no command line, and a later one sees the script, so tests that compare two lookups or
    group by command wait for the child's word first."""
    child = subprocess.Popen(
        [sys.executable, "-c", f"import time; print(flush=True); time.sleep({seconds})"],
        stdout=subprocess.PIPE)
    assert child.stdout is not None
    child.stdout.readline()
    child.stdout.close()  # it says nothing more
    return child


def zombie() -> subprocess.Popen:
    """Start a child that exits at once, returned once it is a zombie: the test reaps it (wait)
    when it is done with it."""
    child = subprocess.Popen(["true"])
    assert gone_soon(child.pid, within=5.0), "`true` did not exit"  # unreaped: a zombie
    return child


def alive(pid: int) -> bool:
    """Running: a zombie waiting for its new parent (init, which here may never reap it) to
    reap it has ended."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone_soon(pid: int, within: float = 2.0, poll=lambda: None) -> bool:
    """Whether ``pid`` has ended within ``within`` seconds; ``poll`` runs each round (to reap
    a child of the test's own)."""
    deadline = time.monotonic() + within
    while True:
        poll()
        if not alive(pid):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


@pytest.fixture(name="child")
def child_fixture():
    """Start a real local process for the dashboard to signal; kill it afterwards if it lives."""
    proc = sleeper()
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


@pytest.fixture(name="child_pids")
def child_pids_fixture():
    """PIDs a test's tools wrote down; killed by PID afterwards if a test failed to."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
