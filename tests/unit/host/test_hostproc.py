"""Host facts per tick: one read of /proc/PID/stat per process."""

from __future__ import annotations

import builtins
import os
import subprocess
import sys

import psutil
import pytest

from gputop.host import pidns, processes
from gputop.host.processes import GONE, NO_FACTS, HostProcesses


def test_a_steady_tick_reads_one_proc_file_per_process(monkeypatch) -> None:
    host = HostProcesses()
    host.lookup(os.getpid())  # first sight: the static facts, with psutil
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def counting(real):
        def counted(path, *args, **kwargs):
            opened.append(str(path))
            return real(path, *args, **kwargs)
        return counted

    monkeypatch.setattr(builtins, "open", counting(real_open))
    monkeypatch.setattr(os, "open", counting(real_os_open))
    facts = host.lookup(os.getpid())
    assert opened == [f"/proc/{os.getpid()}/stat"]
    assert facts.host_memory_mib is not None and facts.cpu_pct is not None




def exited_pid() -> int:
    """The PID of a child that has run and been reaped: no process has it (until reused)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_pid_that_no_longer_exists_is_gone_and_has_no_facts() -> None:
    host = HostProcesses(pid_view=pidns.PidView(True, True))
    pid = exited_pid()
    facts = host.lookup_device(None, [pid, os.getpid()])
    assert facts[pid].gone and not facts[pid].outside_pid_namespace
    assert facts[pid].command is None and facts[pid].user is None
    assert not facts[os.getpid()].gone and facts[os.getpid()].command


def test_a_pid_hidden_from_proc_but_alive_is_not_gone(monkeypatch) -> None:
    """/proc mounted with hidepid shows no entry for another user's process, which still runs:
    the kernel (kill with signal 0) says so, and it keeps today's facts-unknown, not gone."""
    def no_entry(pid):
        raise FileNotFoundError(pid)

    def not_yours(pid, sig):
        raise PermissionError(pid)

    monkeypatch.setattr(processes, "read_stat", no_entry)
    monkeypatch.setattr(processes.os, "kill", not_yours)
    assert HostProcesses().lookup(1) is NO_FACTS


@pytest.mark.parametrize(("error", "expected"), [
    (psutil.NoSuchProcess(4242), GONE),  # exited between the stat read and psutil's
    (psutil.AccessDenied(4242), NO_FACTS),  # runs, not ours to read: as before
    (psutil.ZombieProcess(4242), NO_FACTS),  # exited but not reaped: the PID still exists
])
def test_what_psutil_says_of_a_new_pid_decides_gone(monkeypatch, error, expected) -> None:
    def refuse(pid):
        raise error

    monkeypatch.setattr(psutil, "Process", refuse)
    assert HostProcesses().lookup(os.getpid()) is expected


def test_a_process_in_another_pid_namespace_is_outside_not_gone() -> None:
    """Inside a container, an unmapped host PID is outside the namespace (it may well run)."""
    host = HostProcesses(pid_view=pidns.PidView(False, False))
    pid = exited_pid()
    facts = host.lookup_device(None, [pid])[pid]
    assert facts.outside_pid_namespace and not facts.gone
