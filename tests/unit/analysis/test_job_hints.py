"""Hints name the attributed job: "job 4242 on GPUs 0–7: GPU 5 is its straggler"."""

from dataclasses import replace

from gputop.analysis import hints as H
from gputop.core.model import Container, Job
from gputop.history import History
from tests.support.hint_fixtures import device, history, proc


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


def test_job_energy_is_the_counter_delta_on_the_gpus_it_holds_whole():
    from gputop.analysis.jobs import job_energy

    def make(i):
        slurm = {"job": Job("slurm", "4242", "0")}
        return [
            device(0, energy_j=1000.0 + 360.0 * i,
                   processes=(replace(proc(100, started=H_START + 5), **slurm),)),
            device(1, energy_j=5000.0 + 720.0 * i,
                   processes=(replace(proc(101, started=H_START + 5), **slurm),)),
            # shared with another job: not counted
            device(2, energy_j=0.0 + 999.0 * i, processes=(
                replace(proc(102), **slurm), proc(103, user="bob", command="python eval.py"))),
            device(3, energy_j=None, processes=(replace(proc(104), job=Job("slurm", "77")),)),
        ]
    h = history(11, make, end=H_START + 10)
    jobs = {j["job"]: j for j in job_energy(History.of(h))}
    assert jobs["job 4242"]["devices"] == [0, 1]
    assert jobs["job 4242"]["energy_wh"] == round((3600.0 + 7200.0) / 3600, 3) == 3.0
    assert jobs["job 4242"]["complete"] is True and jobs["job 4242"]["since"] == H_START
    assert jobs["job 77"]["energy_wh"] is None and jobs["job 77"]["complete"] is False


H_START = 1_763_769_000.0
