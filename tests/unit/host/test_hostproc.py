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
from tests.support import procs


def test_a_steady_tick_reads_one_proc_file_per_process(monkeypatch) -> None:
    host = HostProcesses()
    host.lookup(os.getpid())  # first sight: the static facts
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


def refusing(monkeypatch, file: str, error: OSError) -> None:
    """Reading this process's ``/proc/PID/<file>`` raises ``error`` from now on."""
    real = processes._read

    def read(path: str) -> bytes:
        if path == f"/proc/{os.getpid()}/{file}":
            raise error
        return real(path)

    monkeypatch.setattr(processes, "_read", read)


@pytest.mark.parametrize(("file", "error", "expected"), [
    ("stat", FileNotFoundError(), GONE),  # exited between the tick's stat read and this one
    ("cmdline", ProcessLookupError(), GONE),
    ("stat", PermissionError(), NO_FACTS),  # runs, not ours to read
])
def test_what_proc_says_of_a_new_pid_decides_gone(monkeypatch, file, error, expected) -> None:
    refusing(monkeypatch, file, error)
    assert HostProcesses().lookup(os.getpid()) is expected


def test_a_command_line_not_ours_to_read_leaves_the_name(monkeypatch) -> None:
    refusing(monkeypatch, "cmdline", PermissionError())
    facts = HostProcesses().lookup(os.getpid())
    assert facts.name == psutil.Process().name() and facts.command == facts.name
    assert facts.user is not None and facts.started is not None


def test_name_command_and_start_are_psutils_for_a_long_name_and_a_zombie(tmp_path) -> None:
    """The kernel cuts a name to 15 bytes: the command line completes it, as psutil does; a
    zombie has no command line, and its name stands for it."""
    long = tmp_path / "a-very-long-program-name"
    long.symlink_to("/bin/sleep")
    sleeper = subprocess.Popen([str(long), "30"])
    zombie = procs.zombie()
    try:
        host = HostProcesses()
        for child in (sleeper, zombie):
            facts, them = host.lookup(child.pid), psutil.Process(child.pid)
            assert facts.name == them.name() and facts.started == them.create_time()
        assert host.lookup(sleeper.pid).command == " ".join(psutil.Process(sleeper.pid).cmdline())
        assert host.lookup(sleeper.pid).name == "a-very-long-program-name"
        assert host.lookup(zombie.pid).command == "true"
    finally:
        sleeper.kill()
        sleeper.wait()
        zombie.wait()


@pytest.mark.parametrize(("data", "args"), [
    (b"python\x00-m\x00gputop\x00", ["python", "-m", "gputop"]),
    (b"nginx: worker process", ["nginx:", "worker", "process"]),  # setproctitle, no NULs
    (b"postgres: writer  \x00", ["postgres:", "writer", "", ""]),  # one NUL after spaces
    (b"", []),  # a kernel thread or a zombie
    (b"caf\xe9\x00", ["caf\udce9"]),  # not UTF-8: kept as psutil keeps it, made valid later
])
def test_command_lines_split_as_psutil_splits_them(data, args) -> None:
    assert processes.command_line(data) == args


def test_a_process_in_another_pid_namespace_is_outside_not_gone() -> None:
    """Inside a container, an unmapped host PID is outside the namespace (it may well run)."""
    host = HostProcesses(pid_view=pidns.PidView(False, False))
    pid = exited_pid()
    facts = host.lookup_device(None, [pid])[pid]
    assert facts.outside_pid_namespace and not facts.gone
