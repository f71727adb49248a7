"""gputop.core.lifeline in this process, without a screen: stop requests, the terminal's reset,
critical sections and the signals it turns into stop codes."""

from __future__ import annotations

import os
import pty
import signal
import threading
import time

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


def test_no_signal_raises_stopped_while_the_lifeline_starts_its_thread(monkeypatch):
    """Thread.start() waits for the thread; a signal caught then raised Stopped out of
    ``__enter__``, where no ``with`` body catches it: a traceback and exit status 1 (seen in
    the terminal trials under load). Its handlers go in only once the thread runs."""
    handlers_at_start = []
    start = threading.Thread.start

    def starting(thread: threading.Thread) -> None:
        handlers_at_start.append(signal.getsignal(signal.SIGTERM))
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", starting)
    before = signal.getsignal(signal.SIGTERM)
    with Lifeline(quit_code, grace=60):
        assert signal.getsignal(signal.SIGTERM) is not before  # in force in the body
    assert handlers_at_start == [before]


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




def _switches(thread: threading.Thread) -> int:
    """The times the kernel switched the thread out: each sleep it woke from counts one."""
    with open(f"/proc/self/task/{thread.native_id}/status") as fh:
        return sum(int(line.split()[1]) for line in fh if "ctxt_switches" in line)


@pytest.mark.parametrize("session", ["as found", "the kernel's"])
def test_an_idle_lifeline_sleeps_until_something_can_have_ended_the_run(session, monkeypatch):
    """Its thread waits on the parent, the session's leader (pidfds) and the terminal, not on a
    clock. Before: it woke five times a second for the whole run, about a tenth of an idle
    dashboard's CPU. A process started by a container's init is in session 0, whose leader
    cannot be watched; without a terminal the leader is not its business (CI ran this way)."""
    if session == "the kernel's":
        monkeypatch.setattr(os, "getsid", lambda pid: 0)
    with Lifeline(quit_code):
        watch = next(t for t in threading.enumerate() if t.name == "gputop-lifeline")
        time.sleep(0.1)
        before = _switches(watch)
        time.sleep(1.0)
        assert _switches(watch) == before
    watch.join(1.0)
    assert not watch.is_alive()  # the run's end wakes it
