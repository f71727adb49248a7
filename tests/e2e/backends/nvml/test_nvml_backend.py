"""The NVML backend with real processes: a PID that exits between samples is no error, and with
no NVML library on the machine `gputop snapshot --backend nvml` is one line and exit 12."""

from __future__ import annotations

import subprocess

from gputop.backends.base import BackendOptions
from gputop.backends.nvml.backend import NvmlBackend
from tests.support.fake_pynvml import FakeNvml, FakeProcess, ManualClock, h100
from tests.support.paths import ROOT, gputop_cmd
from tests.support.procs import sleeper


def test_a_vanished_pid_is_fine() -> None:
    child = sleeper(30)
    try:
        clock = ManualClock()
        nv = FakeNvml([h100(0, [FakeProcess(pid=child.pid)])], clock=clock.wall)
        backend = NvmlBackend(BackendOptions(), nvml=nv, clock=clock)
        with backend:
            assert backend.sample().devices[0].processes[0].command is not None
            child.kill()
            child.wait()
            proc = backend.sample().devices[0].processes[0]
    finally:
        child.kill()
        child.wait()
    assert proc.pid == child.pid and proc.user is None and proc.cpu_pct is None


# ---------------------------------------------------------------------------- GPM

def test_cli_nvml_without_a_library_is_one_clear_line() -> None:
    # No libnvidia-ml.so.1 exists on this machine: this is the real pynvml failing for real.
    out = subprocess.run(gputop_cmd("snapshot", "--backend", "nvml"), cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 12  # nvidia-smi's "NVML Shared Library couldn't be found or loaded"
    lines = out.stderr.strip().splitlines()
    assert lines == ["gputop: NVML: libnvidia-ml.so.1 not found (is the NVIDIA driver installed?)"]
    assert out.stdout == ""


