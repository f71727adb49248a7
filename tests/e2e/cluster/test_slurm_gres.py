"""`gputop cluster --prometheus` with `--slurm` or `--slurm-me`, as a process: refused in one
line, exit 2, since that view has no node snapshot to find a job's GPUs in."""

from __future__ import annotations

import pytest

from tests.support.paths import ROOT


@pytest.mark.parametrize("flag", [["--slurm", "42"], ["--slurm-me"]])
def test_slurm_with_the_prometheus_view_is_one_line(flag):
    """The Prometheus view has no node snapshot to find a job's GPUs in: refused, not ignored."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "gputop", "cluster", "--prometheus",
                          "http://127.0.0.1:1", *flag, "--once"],
                         cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == ("gputop: --slurm and --slurm-me watch a job's nodes over SSH; "
                          "they do not go with --prometheus\n")
