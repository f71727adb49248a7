"""gputop.core.lifeline where it ends a process: the deadline's os._exit, a critical section it
waits for, a lost parent, and a run that ended in time, each in a subprocess of its own."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import psutil


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
