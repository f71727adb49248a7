"""Hints name the attributed job: "job 4242 on GPUs 0–7: GPU 5 is its straggler"."""

from dataclasses import replace

from hint_fixtures import device, history, proc

from gputop.analysis import hints as H
from gputop.model import Container, Job


def attributed_job(owner_of, n_gpus=8, slow=5):
    """Each GPU's process has its own command (no shared user+command to group them by): only
    the attribution says they are one job."""
    def make(i):
        return [device(g, clock_sm_mhz=1500.0 if g == slow else 1980.0, processes=(
            replace(proc(100 + g, command=f"python worker_{g}.py"), **owner_of(g)),))
            for g in range(n_gpus)]
    return history(30, make)


def test_a_slurm_job_groups_its_gpus_and_names_itself():
    found = [h for h in H.analyze(attributed_job(lambda g: {"job": Job("slurm", "4242", "0")}))
             if h.code == "straggler"]
    assert [h.device for h in found] == [5]
    assert found[0].message.startswith("job 4242 on GPUs 0–7: GPU 5 is its straggler: SM clock")


def test_a_pod_names_itself():
    pod = Container(runtime="containerd", id="ee4b20e90ac7", pod="trainer-0",
                    pod_namespace="research", pod_uid="0125ec2f")
    found = [h for h in H.analyze(attributed_job(lambda g: {"container": pod}, n_gpus=2, slow=1))
             if h.code == "straggler"]
    assert [h.message.split(":")[0] for h in found] == ["pod research/trainer-0 on GPUs 0,1"]


def test_unattributed_processes_with_different_commands_are_not_one_job():
    assert not [h for h in H.analyze(attributed_job(lambda g: {})) if h.code == "straggler"]
