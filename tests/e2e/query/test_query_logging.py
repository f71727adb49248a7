"""A query log in a process of its own: whole rows through SIGINT, SIGTERM and SIGHUP, on under
nohup, and one clear line for an unwritable path or a full disk."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from gputop.backends import open_backend
from gputop.backends.base import BackendOptions
from tests.support.paths import ROOT, gputop_cmd
from tests.support.query import SIGNAL_LOG_FIELDS


def _wait_lines(path, n, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        time.sleep(0.01)
    raise AssertionError(f"{path} never reached {n} lines")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_signal_mid_log_leaves_only_whole_rows(tmp_path, sig):
    log = tmp_path / "log.csv"
    proc = subprocess.Popen(gputop_cmd("--backend", "sim", f"--query-gpu={SIGNAL_LOG_FIELDS}",
                                       "--format=csv", "-lms", "20", "-f", str(log)),
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_lines(log, 1 + 8 * 10)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out == b"" and err == b""
    data = log.read_bytes()
    assert data.endswith(b"\n")
    lines = data.decode().splitlines()
    assert lines[0] == ("timestamp, index, name, power.draw [W], memory.used [MiB], "
                        "utilization.gpu [%], clocks_event_reasons.active")
    rows = lines[1:]
    assert len(rows) % 8 == 0 and len(rows) >= 80  # whole samples of 8 GPUs
    for i, row in enumerate(rows):
        cells = row.split(", ")
        assert len(cells) == 7 and cells[1] == str(i % 8) and cells[3].endswith(" W"), row
    # and the log replays
    backend = open_backend("replay", BackendOptions(replay=str(log)))
    assert len(backend) == len(rows) // 8


def _ignore_sighup() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def test_under_nohup_a_dropped_session_does_not_end_the_log(tmp_path):
    """`nohup gputop --query-gpu … -f log &` starts with SIGHUP ignored: it must stay ignored."""
    log = tmp_path / "log.csv"
    proc = subprocess.Popen(gputop_cmd("--backend", "sim", "--query-gpu=timestamp,index",
                                       "--format=csv", "-lms", "20", "-f", str(log)),
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_ignore_sighup)
    try:
        _wait_lines(log, 1 + 8 * 5)
        proc.send_signal(signal.SIGHUP)
        seen = log.read_bytes().count(b"\n")
        _wait_lines(log, seen + 8 * 10)  # still logging
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    data = log.read_bytes()
    assert data.endswith(b"\n") and (data.count(b"\n") - 1) % 8 == 0


def test_unwritable_path_is_a_clear_error(tmp_path):
    target = tmp_path / "no-such-dir" / "log.csv"
    proc = subprocess.run(gputop_cmd("--backend", "sim", "--query-gpu=index", "--format=csv",
                                     "-f", str(target)),
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr == f"gputop: cannot open log file {target}: No such file or directory\n"
    assert proc.stdout == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_disk_full_is_a_clear_error():
    proc = subprocess.run(gputop_cmd("--backend", "sim", "--query-gpu=index", "--format=csv",
                                     "-lms", "10", "-f", "/dev/full"),
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr == "gputop: cannot write to /dev/full: No space left on device\n"


