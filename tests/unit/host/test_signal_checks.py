"""The checks before a signal is sent, read from /proc without psutil: the same owner and start
time psutil gives, the same refusals, and psutil not loaded by them (6-10 ms of the first `k`)."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from gputop.host import os_facts, signals
from gputop.host.owners import parse_uids
from tests.support import paths


@pytest.fixture(name="child")
def child_fixture():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def test_owner_and_start_are_psutils(child) -> None:
    with open(f"/proc/{child.pid}/status") as fh:
        assert parse_uids(fh.read()) == tuple(psutil.Process(child.pid).uids())
    assert os_facts.started(child.pid) == psutil.Process(child.pid).create_time()


def test_only_the_owner_or_root_may_signal(monkeypatch, child) -> None:
    real = os.getuid()
    assert signals.refusal(child.pid) is None
    monkeypatch.setattr(signals.os, "geteuid", lambda: real + 1)
    assert f"belongs to another user (uid {real}); only root" in signals.refusal(child.pid)
    monkeypatch.setattr(signals.os, "geteuid", lambda: 0)
    if real != 0:
        assert signals.refusal(child.pid) is None
        assert "a web viewer" in signals.refusal(child.pid, owner_only=True)


def test_a_reused_pid_is_refused_and_a_gone_one_left_to_send(child) -> None:
    created = psutil.Process(child.pid).create_time()
    assert signals.refusal(child.pid, started=created) is None
    assert "reused" in signals.refusal(child.pid, started=created - 100)
    child.kill()
    child.wait()
    assert signals.refusal(child.pid) is None  # send() says it has already exited
    assert signals.send(child.pid, "SIGTERM").message == \
        f"process {child.pid} has already exited"


def test_a_process_named_in_bytes_that_are_not_utf8_is_checked_all_the_same() -> None:
    # /proc/PID/status starts with the name the process chose: any bytes (the hostile-names
    # test's process stopped the check with a UnicodeDecodeError)
    code = ("import sys, time; open('/proc/self/comm', 'wb').write(b'bad\\x9bname'); "
            "print('named', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "named"
        with open(f"/proc/{proc.pid}/comm", "rb") as fh:
            assert fh.read() == b"bad\x9bname\n"
        assert signals.refusal(proc.pid) is None
    finally:
        proc.kill()
        proc.wait()


def test_a_status_without_user_ids_is_no_owner() -> None:
    assert parse_uids("Name:\tx\nUid:\t1000\n") is None
    assert parse_uids("Name:\tx\nUid:\t1000\t1001\t1002\t1003\n") == (1000, 1001, 1002)


def test_the_checks_load_no_psutil(child) -> None:
    code = ("import sys; from gputop.host import signals; "
            f"assert signals.refusal({child.pid}) is None; print('psutil' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=paths.ROOT, env=dict(os.environ, PYTHONPATH=str(paths.ROOT)))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"
