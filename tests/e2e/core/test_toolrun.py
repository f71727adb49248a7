"""The shared runner of external tools (npu-smi, Slurm's commands) with real processes: its
output capped, its time bounded, and the tool's whole process group killed on every way out,
so no child of a tool outlives a run, whether the tool hung, printed forever, was closed from
another thread or exited leaving a child behind."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from gputop.core import toolrun
from tests.support.procs import alive, child_pids_fixture, gone_soon  # noqa: F401 - the fixture


def child_of(tmp_path: Path, script: str) -> tuple[list[str], Path]:
    """``sh -c SCRIPT`` whose ``$PIDFILE`` is a file of tmp_path, and that file."""
    pidfile = tmp_path / "child.pid"
    return ["sh", "-c", script.replace("$PIDFILE", str(pidfile))], pidfile


def read_pid(pidfile: Path, child_pids: list[int]) -> int:
    deadline = time.monotonic() + 5
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline, "the tool never started its child"
        time.sleep(0.02)
    pid = int(pidfile.read_text())
    child_pids.append(pid)
    return pid


def test_a_hung_tools_child_dies_with_it(tmp_path, child_pids):
    argv, pidfile = child_of(tmp_path, "sleep 1000 & echo $! > $PIDFILE; wait")
    started = time.monotonic()
    with pytest.raises(toolrun.ToolTimeout):
        toolrun.run(argv, 0.5)
    assert time.monotonic() - started < 2.5
    assert gone_soon(read_pid(pidfile, child_pids))


def test_a_tool_printing_forever_is_stopped_at_the_cap(tmp_path, child_pids):
    argv, pidfile = child_of(tmp_path, "sleep 1000 & echo $! > $PIDFILE; exec yes")
    started = time.monotonic()
    with pytest.raises(toolrun.ToolOutputTooLarge):
        toolrun.run(argv, 30, max_output=1 << 20)
    assert time.monotonic() - started < 10  # at the cap, not at the timeout
    assert gone_soon(read_pid(pidfile, child_pids))


def test_a_child_left_running_by_a_tool_that_exited_is_killed(tmp_path, child_pids):
    # the child lets go of the pipes: the tool's answer is complete and its exit is clean
    argv, pidfile = child_of(
        tmp_path, "sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > $PIDFILE; echo answer")
    done = toolrun.run(argv, 5)
    assert (done.returncode, done.stdout) == (0, b"answer\n")
    assert gone_soon(read_pid(pidfile, child_pids))


def test_close_from_another_thread_stops_a_run_at_once(tmp_path, child_pids):
    runner = toolrun.ToolRunner()
    argv, pidfile = child_of(tmp_path, "sleep 1000 & echo $! > $PIDFILE; wait")
    failed: list[BaseException] = []

    def run() -> None:
        try:
            runner.run(argv, 60)
        except toolrun.ToolClosed as exc:
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    pid = read_pid(pidfile, child_pids)
    runner.close()
    thread.join(3)
    assert not thread.is_alive() and len(failed) == 1
    assert gone_soon(pid)
    with pytest.raises(toolrun.ToolClosed):
        runner.run(["true"], 5)


def test_a_failing_tools_message_is_one_printable_line():
    argv = ["sh", "-c", r"printf '\n  bad\033]0;title\007 \377thing\nsecond\n' >&2; exit 3"]
    done = toolrun.run(argv, 5)
    assert done.returncode == 3
    assert done.message() == "bad^[]0;title^G \ufffdthing"


def test_a_tool_dies_with_gputop_even_by_sigkill(tmp_path, child_pids):
    """SIGKILL leaves gputop no clean-up to run: the tool's parent-death signal ends it."""
    import subprocess
    import sys

    pidfile = tmp_path / "tool.pid"
    runner = subprocess.Popen([sys.executable, "-c", (
        "from gputop.core import toolrun\n"
        f"toolrun.run(['sh', '-c', 'echo $$ > {pidfile}; exec sleep 1004'], 60)\n")])
    try:
        pid = read_pid(pidfile, child_pids)
        runner.kill()
        runner.wait(5)
        assert gone_soon(pid), "the tool outlived the gputop that started it"
    finally:
        runner.kill()
        runner.wait()


def test_standard_input_is_handed_whole_and_never_blocks_a_tool_that_does_not_read_it():
    """An alert's JSON reaches a command on its standard input; a command that never reads it
    (a pipe would fill at 64 KiB and block the writer for ever) exits as if it had none."""
    data = b"x" * (1 << 20)
    done = toolrun.run(["wc", "-c"], 5, stdin=data)
    assert (done.returncode, done.stdout.split()) == (0, [b"1048576"])
    done = toolrun.run(["true"], 5, stdin=data)
    assert done.returncode == 0
    assert toolrun.run(["cat"], 5).stdout == b""  # no stdin: /dev/null, as before
