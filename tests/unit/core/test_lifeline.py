"""gputop.core.lifeline without a screen: stop requests, the deadline, critical sections, children.

What ends the process (the deadline's os._exit) runs in a subprocess of its own."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest

from gputop.core import lifeline
from gputop.core.lifeline import RESET, Lifeline, Stopped, Terminal, critical, quit_code


def test_ctrl_c_quits_and_every_other_signal_is_128_plus_its_number():
    assert quit_code(signal.SIGINT) == 0
    assert quit_code(signal.SIGTERM) == 143
    assert quit_code(signal.SIGHUP) == 129
    assert quit_code(signal.SIGQUIT) == 131


def test_before_attach_a_signal_raises_stopped_once_then_goes_to_the_app():
    with pytest.raises(Stopped) as caught, Lifeline(quit_code, grace=60) as line:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
    assert caught.value.code == 143 and line.code == 143
    stops: list[int] = []
    with Lifeline(quit_code, grace=60) as line:
        line.attach(stops.append)
        os.kill(os.getpid(), signal.SIGHUP)
        os.kill(os.getpid(), signal.SIGTERM)  # the first reason to stop wins
        time.sleep(0.1)
    assert stops == [129]


def test_a_request_made_before_attach_is_delivered_on_attach():
    stops: list[int] = []
    with Lifeline(quit_code, grace=60) as line:
        line.request(129)
        line.attach(stops.append)
    assert stops == [129]


def test_a_lifeline_not_entered_starts_no_deadline():
    """Only a run inside ``with Lifeline(...)`` may be ended by its deadline."""
    def deadlines() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "gputop-deadline"}

    before = deadlines()
    line = Lifeline(quit_code, grace=0.01)
    line.request(129)
    assert deadlines() == before and line.code == 129


def test_an_exit_already_under_way_keeps_its_code():
    """`q`, then SIGTERM while the app shuts down: still 0."""
    stops: list[int] = []
    with Lifeline(quit_code, grace=60) as line:
        line.attach(stops.append)
        line.arm(0)
        line.request(143)
    assert line.code == 0 and stops == []


def test_critical_sections_are_asked_to_wrap_up_then_waited_for():
    done = threading.Event()
    order: list[str] = []

    def holder() -> None:
        with critical(wrap_up=lambda: order.append("wrap up")):
            done.wait(5)
            time.sleep(0.1)
            order.append("restored")

    thread = threading.Thread(target=holder)
    thread.start()
    time.sleep(0.05)
    assert len(lifeline._holders) == 1  # the section is registered
    waiter = threading.Thread(target=lifeline._wait_for_critical, args=(5,))
    waiter.start()
    time.sleep(0.05)
    done.set()
    waiter.join(5)
    thread.join(5)
    assert order == ["wrap up", "restored"] and not lifeline._holders


def run_script(body: str, timeout: float = 10) -> subprocess.CompletedProcess:
    code = "import os, signal, subprocess, sys, threading, time\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout)


def test_the_deadline_ends_a_stuck_stop_with_its_code_and_kills_every_child():
    """The main thread never finishes (a shutdown blocked for good); a child runs a tool in a
    process group of its own, with a child of its own. Both go, the exit code stays."""
    started = time.monotonic()
    proc = run_script("""
        from gputop.core.lifeline import Lifeline, quit_code
        tool = subprocess.Popen(["sh", "-c", "sleep 1003 & wait"], start_new_session=True)
        time.sleep(0.2)
        print(tool.pid, flush=True)
        with Lifeline(quit_code, grace=0.3) as line:
            line.attach(lambda code: None)  # an app that never stops
            os.kill(os.getpid(), signal.SIGTERM)
            threading.Event().wait()
    """)
    assert proc.returncode == 143 and time.monotonic() - started < 5
    tool = int(proc.stdout.split()[0])
    left = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "1003"]]
    for p in left:
        p.kill()
    assert not psutil.pid_exists(tool) or psutil.Process(tool).status() == "zombie"
    assert left == [], "the tool's child outlived the forced end"


def test_the_deadline_waits_for_a_critical_section():
    proc = run_script("""
        from gputop.core.lifeline import Lifeline, critical, quit_code
        cancel = threading.Event()
        def sweep():
            with critical(wrap_up=cancel.set):
                cancel.wait()
                time.sleep(0.5)  # putting the limits back
                print("restored", flush=True)
        threading.Thread(target=sweep, daemon=True).start()
        with Lifeline(quit_code, grace=0.2) as line:
            line.attach(lambda code: None)
            line.request(129)
            threading.Event().wait()
    """)
    assert proc.returncode == 129 and proc.stdout == "restored\n"


def test_a_lost_parent_is_a_hang_up(tmp_path):
    """The wrapper that started it dies: the watch sees the new parent and stops with 129."""
    proc = run_script("""
        r, w = os.pipe()
        if os.fork():
            os.close(w)
            print(os.read(r, 100).decode(), flush=True)
            os._exit(0)  # the parent dies at once
        from gputop.core.lifeline import Lifeline, quit_code
        os.close(r)
        with Lifeline(quit_code, grace=60) as line:
            stopped = threading.Event()
            line.attach(lambda code: stopped.set())
            os.write(w, str(os.getpid()).encode())
            os.close(w)
            stopped.wait(5)
            with open(os.environ["OUT"], "w") as fh:
                fh.write(str(line.code))
    """.replace('os.environ["OUT"]', repr(str(tmp_path / "code"))))
    assert proc.returncode == 0
    out = tmp_path / "code"
    deadline = time.monotonic() + 5
    while not (out.exists() and out.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.read_text() == "129"


def test_the_terminal_is_written_back_only_when_taken_and_its_modes_always():
    master, slave = pty.openpty()
    try:
        terminal = Terminal(fd_in=slave, fd_outs=(slave,))
        assert terminal.path == os.ttyname(slave)
        saved = list(terminal.modes)
        raw = list(saved)
        raw[3] &= ~(0o2 | 0o10)  # ICANON and ECHO off, as Textual does
        import termios

        termios.tcsetattr(slave, termios.TCSANOW, raw)
        terminal.restore()
        assert termios.tcgetattr(slave)[3] == saved[3]
        os.set_blocking(master, False)
        with pytest.raises(BlockingIOError):
            os.read(master, 4096)  # nothing written: the screen was not taken
        terminal.taken = True
        terminal.restore()
        assert os.read(master, 4096) == RESET and not terminal.taken
    finally:
        os.close(master)
        os.close(slave)


def test_a_run_that_ended_in_time_is_not_ended_later_by_its_deadline():
    """The process goes on after the run (a test that ran the dashboard in-process, the rest of
    main): the deadline armed by the run's exit must not end it a second later."""
    proc = run_script("""
        from gputop.core.lifeline import Lifeline, quit_code
        with Lifeline(quit_code, grace=0.2) as line:
            line.arm(0)
        time.sleep(0.6)
        print("still here", flush=True)
        sys.exit(7)
    """)
    assert proc.stdout == "still here\n" and proc.returncode == 7
