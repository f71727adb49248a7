"""`gputop cluster --prometheus` with `--slurm` or `--slurm-me`, as a process: `--slurm JOBID`
reads the job from the `hpc_job` label; `--slurm-me` (squeue's answer, which the series cannot
give) is refused in one line, exit 2; a job id that is none is refused before any query."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT


def cluster(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gputop", "cluster", "--prometheus",
                           "http://127.0.0.1:1", *args, "--once", "--timeout", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_slurm_me_with_the_prometheus_view_is_one_line():
    out = cluster("--slurm-me")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == ("gputop: --slurm-me asks squeue for your jobs and watches them over "
                          "SSH; with --prometheus name the job: --slurm JOBID\n")


def test_slurm_with_the_prometheus_view_asks_prometheus():
    out = cluster("--slurm", "42")
    assert out.returncode == 1, out.stderr
    assert out.stderr.startswith("gputop cluster: Prometheus unreachable at http://127.0.0.1:1")
    assert "job 42: 0 GPUs on 0 nodes" in out.stdout
    bad = cluster("--slurm", "42;rm")
    assert bad.returncode == 1 and bad.stderr == "gputop: not a Slurm job id: '42;rm'\n"
