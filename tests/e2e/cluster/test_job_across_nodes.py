"""A Slurm job across two nodes, seen side by side: `gputop cluster --slurm JOBID --once`.

A real Slurm (slurm_lab.py) runs two slurmd on this machine, nodes n1 and n2 with 2 GPUs each as
GRES; a job asks for both nodes and both GPUs of each. A real sshd on 127.0.0.1 answers for
each node name on a port of its own whose sessions say which simulator scenario the node runs
(sshd's SetEnv; the remote command reads it): n1 runs two GPUs of the healthy `training` job,
n2 the `multinode-straggler` scenario, whose GPU 1 throttles. The cross-node view must flag
n2's GPU 1, and only it, with the straggler hint's reason."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest

from tests.support.paths import ROOT
from tests.support.slurm_lab import Slurm
from tests.support.ssh_harness import Alias, SshServer, find_sshd, keygen, write_ssh_config

NODES = {"n1": "training", "n2": "multinode-straggler"}  # node -> its simulator scenario
GPUS = 2


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    if find_sshd() is None:
        pytest.skip("OpenSSH server (sshd) is not installed (scripts/install-test-deps.sh installs it)")
    tmp = tmp_path_factory.mktemp("job-across")
    (tmp / "slurm").mkdir()
    slurm = Slurm(tmp / "slurm", gpus=GPUS, nodes=tuple(NODES))
    client = tmp / "id_ed25519"
    server = SshServer(tmp / "sshd", keygen(client))
    try:
        slurm.start()
        ports = {node: server.add_port({"LAB_SCENARIO": scenario})
                 for node, scenario in NODES.items()}
        server.start()
        known = tmp / "known_hosts"
        known.write_text(server.known_hosts_line() + "\n")
        config = write_ssh_config(tmp / "ssh_config", [
            Alias(node, server, client, known, port=port) for node, port in ports.items()])
        job_id = slurm.submit("exec sleep 3600", "-N2", f"--gres=gpu:{GPUS}")
        # Each node's agent on its own scenario (the remote shell expands $LAB_SCENARIO), GPUs 0-1
        # of it: as many as Slurm manages there, so its GRES indices name them.
        agent = (f"cd {shlex.quote(str(ROOT))} && PYTHONPATH={shlex.quote(str(ROOT))} exec "
                 f"{shlex.quote(sys.executable)} -m gputop agent --backend sim "
                 f"--scenario \"$LAB_SCENARIO\" -i 0,1 --interval 0.5")
        yield {"slurm": slurm, "id": job_id, "ssh_config": config, "agent": agent}
    finally:
        server.kill()
        slurm.stop()


def cluster_once(job, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gputop", "cluster", "--slurm", job["id"], "--once", *args,
         "--ssh-config", str(job["ssh_config"]), "--remote-command", job["agent"],
         "--timeout", "20"],
        cwd=ROOT, env=job["slurm"].env, capture_output=True, text=True, timeout=60)


def test_the_slowed_gpu_is_flagged_across_the_nodes(job):
    assert job["slurm"].run("squeue", "-h", "-j", job["id"], "-o", "%N").strip() == "n[1-2]"
    out = cluster_once(job, "--json")
    assert out.returncode == 0, out.stderr
    (shown,) = json.loads(out.stdout)["jobs"]
    assert shown["id"] == job["id"]
    assert [(n["host"], [g["index"] for g in n["gpus"]]) for n in shown["nodes"]] == [
        ("n1", [0, 1]), ("n2", [0, 1])]
    (straggler,) = shown["stragglers"]
    assert (straggler["node"], straggler["index"]) == ("n2", 1)
    assert straggler["reason"].startswith("GPU 1 on n2 is the slow one of the 4 GPUs of its "
                                          "job: SM clock 72% of max while its peers run at 100% "
                                          "(sw_thermal_slowdown)"), straggler
    flagged = [(n["host"], g["index"]) for n in shown["nodes"] for g in n["gpus"]
               if g["straggler"] is not None]
    assert flagged == [("n2", 1)]
