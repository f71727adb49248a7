"""`gputop cluster --slurm JOBID` / `--slurm-me` against a real single-node Slurm started here,
and a real job's process attributed to its job."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from gputop.cluster import slurm
from gputop.cluster.job_view import only_jobs
from gputop.core.model import Device, Job, Process, Snapshot
from gputop.host.attribution import Attribution
from tests.support.paths import ROOT
from tests.support.slurm_lab import Slurm


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    s = Slurm(tmp_path_factory.mktemp("slurm"))
    try:
        s.start()
        yield s
    finally:
        s.stop()


def test_job_nodes_and_my_jobs(cluster, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
    # a duration no other process has: a stray ``sleep 300`` (another run's orphan) is not it
    duration = f"300.{os.getpid()}{time.monotonic_ns() % 10**6}"
    job = cluster.submit(f"sleep {duration}")
    assert slurm.job_nodes(job) == [cluster.host]
    assert slurm.my_jobs()[job] == [cluster.host]
    # the job's own process carries SLURM_JOB_ID (this Slurm tracks processes without cgroups)
    deadline = time.monotonic() + 10
    sleeper = None
    while sleeper is None and time.monotonic() < deadline:
        sleeper = next((p for p in psutil.process_iter(["cmdline"])
                        if p.info["cmdline"] == ["sleep", duration]), None)
    assert sleeper is not None
    assert Attribution().owner(sleeper.pid).job == Job("slurm", job, None), lineage(sleeper)


def lineage(proc: psutil.Process) -> list[tuple[int, str]]:
    """(pid, name) up to init, for a failure to say which ancestors the check walked."""
    try:
        return [(p.pid, p.name()) for p in [proc, *proc.parents()]]
    except psutil.Error as exc:
        return [(proc.pid, f"gone: {exc}")]


def test_errors_are_one_line(cluster, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
    with pytest.raises(slurm.SlurmError, match="^squeue: .*Invalid job id"):
        slurm.job_nodes("999999")
    with pytest.raises(slurm.SlurmError, match="not a Slurm job id"):
        slurm.job_nodes("1;reboot")
    out = subprocess.run([sys.executable, "-m", "gputop", "cluster", "--slurm", "999999", "--once"],
                         cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("gputop: squeue: ")


def test_no_slurm_installed_is_one_line(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(slurm.SlurmError, match="squeue not found"):
        slurm.job_nodes("42")


def test_only_the_jobs_gpus_are_kept():
    snap = Snapshot(host="n", time=1.0, backend="nvml", devices=(
        Device(index=0, processes=(Process(pid=1, job=Job("slurm", "42")),)),
        Device(index=1, processes=(Process(pid=2, job=Job("slurm", "7")),)),
        Device(index=2, processes=(Process(pid=3),)),
    ))
    assert [d.index for d in only_jobs(snap, {"42"}).devices] == [0]


def test_the_job_view_filters_every_status_the_screen_reads():
    from gputop.cluster.node import NodeStatus
    from gputop.commands.cluster import JobView

    snap = Snapshot(host="n", time=1.0, backend="nvml", devices=(
        Device(index=0, processes=(Process(pid=1, job=Job("slurm", "42")),)),
        Device(index=1, processes=(Process(pid=2),)),
    ))

    class Inner:
        version = 3

        def statuses(self):
            return [NodeStatus("n", "ok", "agent", "", data=snap, seq=5),
                    NodeStatus("m", "connecting", "agent", "")]

        def status(self, host):
            return self.statuses()[0]

    view = JobView(Inner(), {"42"})
    assert [d.index for d in view.statuses()[0].snapshot.devices] == [0]
    assert view.statuses()[1].snapshot is None and view.version == 3
    assert [d.index for d in view.status("n").snapshot.devices] == [0]
