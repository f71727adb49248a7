"""Host facts of real child processes: CPU and RSS as psutil reads them for a busy child, and a
reused or vanished PID looked up afresh."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from gputop.core.units import MIB
from gputop.host.processes import GONE, HostProcesses
from tests.support.procs import sleeper


def test_cpu_and_rss_agree_with_psutil_for_a_busy_child() -> None:
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        host = HostProcesses()
        peer = psutil.Process(child.pid)
        first_cpu = host.lookup(child.pid).cpu_pct  # the facts object is updated in place
        peer.cpu_percent(None)
        time.sleep(1.0)
        ours = host.lookup(child.pid)
        theirs = peer.cpu_percent(None)
        rss = peer.memory_info().rss / MIB
    finally:
        child.kill()
        child.wait()
    assert first_cpu is None  # one reading is no rate yet
    assert ours.cpu_pct > 10  # it spins: whatever share of a core the busy machine gave it
    assert abs(ours.cpu_pct - theirs) < 15  # the same window, read a moment apart
    assert abs(ours.host_memory_mib - rss) < 1
    assert ours.started == peer.create_time()


def test_a_reused_pid_is_looked_up_afresh_and_a_gone_one_is_gone() -> None:
    child = sleeper(30)
    try:
        host = HostProcesses()
        before = host.lookup(child.pid)
        host._entries[child.pid].start_ticks -= 1  # as if another process had had this pid
        after = host.lookup(child.pid)
        assert after is not before and after.command == before.command
        assert after.cpu_pct is None  # a new process: no rate from the old one's CPU time
    finally:
        child.kill()
        child.wait()
    assert host.lookup(child.pid) is GONE
