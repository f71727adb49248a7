"""`gputop cluster --slurm JOBID --once --json` end to end: a real Slurm (slurm_lab.py) with 4 GPUs
as GRES places a job asking for 2 on this machine, a real sshd on 127.0.0.1 answers for the node
name Slurm gives, and the agent it starts there reads the C fake of libnvidia-ml (cfake.py) whose
GPUs hold real processes: the job's own on one of its GPUs, processes of no job on others. Only
the job's two GPUs may come back: the one with its process and its job id, and the one it was
given and runs nothing on. NVML's index and the device's minor number differ here, as on some
real nodes: Slurm's GRES indices count minor numbers."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time

import psutil
import pytest

from tests.support import cfake
from tests.support.paths import ROOT
from tests.support.slurm_lab import Slurm
from tests.support.ssh_harness import Alias, SshServer, find_sshd, keygen, write_ssh_config

GPUS = 4
# NVML index -> minor number (/dev/nvidiaN). The job asks for 2 GPUs and, alone on the node, gets
# GRES indices 0-1: minors 0 and 1, that is NVML's GPUs 2 and 3.
MINORS = {0: 3, 1: 2, 2: 0, 3: 1}
JOB_GPU = 2  # runs the job's process
IDLE_JOB_GPU = 3  # given to the job, runs nothing
OTHER_GPUS = (0, 1)  # processes of no job


def _job_process(slurm: Slurm, job: str, marker: str) -> psutil.Process:
    """The job's own process: the batch script exec'd into ``sleep MARKER`` (the marker, unique
    to this run, tells it from the jobs of other Slurm labs on the machine)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for p in psutil.process_iter(["cmdline"]):
            if p.info["cmdline"] == ["sleep", marker]:
                return p
        time.sleep(0.1)
    raise AssertionError(f"job {job}'s process never appeared: {slurm.run('squeue')}")


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    why = cfake.available()
    if why is not None:
        pytest.skip(why)
    if find_sshd() is None:
        pytest.skip("OpenSSH server (sshd) is not installed (scripts/install-test-deps.sh installs it)")
    tmp = tmp_path_factory.mktemp("slurm-e2e")
    folder = cfake.build(tmp / "fakenvml")
    (tmp / "slurm").mkdir()
    slurm = Slurm(tmp / "slurm", gpus=GPUS)
    client = tmp / "id_ed25519"
    server = SshServer(tmp / "sshd", keygen(client))
    outsiders: list[subprocess.Popen] = []
    try:
        slurm.start()
        server.start()
        marker = f"3600.{os.getpid()}"
        job = slurm.submit(f"exec sleep {marker}", "--gres=gpu:2")
        inside = _job_process(slurm, job, marker)
        outsiders = [subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL)
                     for _ in OTHER_GPUS]
        config = tmp / "fakenvml.conf"
        config.write_text("\n".join(
            [f"gpu_count={GPUS}", f"gpu.{JOB_GPU}.procs={inside.pid}:20G"]
            + [f"gpu.{g}.minor={m}" for g, m in MINORS.items()]
            + [f"gpu.{g}.procs={p.pid}:7G" for g, p in zip(OTHER_GPUS, outsiders)]) + "\n")
        known = tmp / "known_hosts"
        known.write_text(server.known_hosts_line() + "\n")
        # The node name Slurm gives is the name ssh is asked for: the config sends it here.
        ssh_config = write_ssh_config(tmp / "ssh_config",
                                      [Alias(slurm.host, server, client, known)])
        agent = (f"cd {shlex.quote(str(ROOT))} && exec env "
                 f"LD_LIBRARY_PATH={shlex.quote(str(folder))} "
                 f"FAKENVML_CONFIG={shlex.quote(str(config))} "
                 f"PYTHONPATH={shlex.quote(str(ROOT))} "
                 f"{shlex.quote(sys.executable)} -m gputop agent --backend nvml --interval 0.5")
        yield {"slurm": slurm, "job": job, "inside": inside.pid,
               "outsiders": [p.pid for p in outsiders], "ssh_config": ssh_config,
               "agent": agent}
    finally:
        for p in outsiders:
            p.kill()
            p.wait()
        server.kill()
        slurm.stop()


def cluster_once(node, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gputop", "cluster", *args, "--once", "--json",
         "--ssh-config", str(node["ssh_config"]), "--remote-command", node["agent"],
         "--timeout", "20"],
        cwd=ROOT, env=node["slurm"].env, capture_output=True, text=True, timeout=60)


def test_only_the_jobs_gpus_and_process_come_back_through_ssh(node):
    out = cluster_once(node, "--slurm", node["job"])
    assert out.returncode == 0, out.stderr
    (shown,) = json.loads(out.stdout)["nodes"]
    assert shown["host"] == node["slurm"].host and shown["state"] == "ok", shown
    devices = shown["snapshot"]["devices"]
    assert [(d["index"], d["minor_number"]) for d in devices] == [(JOB_GPU, 0), (IDLE_JOB_GPU, 1)]
    assert devices[1]["processes"] == []
    (proc,) = devices[0]["processes"]
    assert proc["pid"] == node["inside"]
    assert proc["job"]["scheduler"] == "slurm" and proc["job"]["id"] == node["job"]
    assert proc["gpu_memory_mib"] == 20 * 1024
    for pid in node["outsiders"]:
        assert str(pid) not in out.stdout


def test_slurm_me_finds_the_same_job(node):
    out = cluster_once(node, "--slurm-me")
    assert out.returncode == 0, out.stderr
    (shown,) = json.loads(out.stdout)["nodes"]
    assert [d["index"] for d in shown["snapshot"]["devices"]] == [JOB_GPU, IDLE_JOB_GPU]
