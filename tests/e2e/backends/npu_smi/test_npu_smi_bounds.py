"""Bounded resources with a real fake `npu-smi`: one that prints forever costs gputop a few MiB
and one clear line; the agent says hello at once and keeps its stream alive while a slow first
read runs; a stop signal in that window leaves no npu-smi behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support.npu_smi import FakeNpuSmi
from tests.support.npu_smi_expected import T_910B4
from tests.support.paths import ROOT
from tests.support.peak_rss import peak_run
from tests.support.procs import alive


def test_npu_smi_printing_forever_is_stopped_with_one_line(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"file": T_910B4, "forever": True})])
    started = time.monotonic()
    code, peak_kib, stderr = peak_run("snapshot", "--backend", "npu-smi",
                                      env={"GPUTOP_NPU_SMI_TIMEOUT": "60"})
    assert time.monotonic() - started < 30  # stopped at the cap, not at the timeout
    assert code == 1 and stderr.count("\n") == 0, stderr
    assert "`npu-smi info` printed more than 4 MiB" in stderr
    assert peak_kib < 300 * 1024, f"peak RSS {peak_kib // 1024} MiB"
    assert not [p for p in fake_npu_smi.pids() if alive(p)]


def start_agent(fake: FakeNpuSmi) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gputop", "agent", "--backend", "npu-smi",
                             "--interval", "0.5"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT,
                            env={**os.environ, "GPUTOP_NPU_SMI_TIMEOUT": "60"})


def test_agent_says_hello_at_once_and_keeps_alive_during_a_slow_first_read(
        fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"delay": 3, "file": T_910B4})])
    started = time.monotonic()
    proc = start_agent(fake_npu_smi)
    try:
        hello = proc.stdout.readline()
        hello_s = time.monotonic() - started
        assert b'"hello":"gputop"' in hello and hello_s < 2.5  # before the 3 s read ends
        assert proc.stdout.readline() == b"\n"  # alive while npu-smi still reads
        line = proc.stdout.readline()
        while line == b"\n":
            line = proc.stdout.readline()
        assert b'"backend":"npu-smi"' in line  # then the snapshots
    finally:
        proc.stdin.close()
        assert proc.wait(10) == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_during_a_hanging_first_read_leaves_no_npu_smi(
        fake_npu_smi: FakeNpuSmi, sig: int) -> None:
    fake_npu_smi.set([("info", {"delay": 120, "file": T_910B4})])
    proc = start_agent(fake_npu_smi)
    try:
        assert b'"hello"' in proc.stdout.readline()
        deadline = time.monotonic() + 10
        while not fake_npu_smi.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        [pid] = fake_npu_smi.pids()
        assert alive(pid)
        proc.send_signal(sig)
        assert proc.wait(10) == 128 + sig
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 3
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = alive(pid)
    if left:
        os.kill(pid, signal.SIGKILL)  # the test's own child's child: not left behind either
    assert not left, "npu-smi was left running"
