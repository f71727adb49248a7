"""A Slurm job's GPUs from its GRES indices (``scontrol show job -d``'s IDX), matched to a node's
GPUs by minor number, and checked against the processes' own job attribution."""

from __future__ import annotations

import pytest

from gputop.cluster import slurm
from gputop.cluster.job_view import job_devices, only_jobs
from gputop.cluster.slurm import (
    GpuGrant,
    devices_by_gres,
    parse_idx,
    parse_job_gres,
    parse_node_gpus,
)
from gputop.commands.cluster import JobView
from gputop.core.model import Device, Job, Process, Snapshot
from tests.support.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "slurm"


def test_the_gres_lines_of_real_output():
    real = (FIXTURES / "scontrol-show-job-d-gres-22.05.txt").read_text()
    assert parse_job_gres(real) == [("vm", frozenset({0, 1}))]
    typed = (FIXTURES / "scontrol-show-job-d-typed-excerpt.txt").read_text()
    assert parse_job_gres(typed) == [("uri-gpu003", frozenset({0, 1, 2, 3}))]


def test_gres_forms_and_what_is_not_a_gpu():
    text = ("     Nodes=gpu[01-02] CPU_IDs=0-7 Mem=0 GRES=gpu:a100:2(IDX:0,3)\n"
            "     Nodes=gpu03 CPU_IDs=0-7 Mem=0 GRES=gpu:1(IDX:5),shard:2(IDX:0-1)\n"
            "     Nodes=old01 CPU_IDs=0-3 Mem=0 GRES_IDX=gpu(IDX:0-1)\n"
            "     Nodes=cpu01 CPU_IDs=0-3 Mem=0 GRES=(null)\n"
            "     Nodes=mps01 CPU_IDs=0-3 Mem=0 GRES=mps:100(IDX:0)\n")
    assert parse_job_gres(text) == [("gpu[01-02]", frozenset({0, 3})), ("gpu03", frozenset({5})),
                                    ("old01", frozenset({0, 1}))]
    assert parse_idx("0-1,4-5") == frozenset({0, 1, 4, 5})
    for bad in ("", "1-", "3-1", "a", "0-99999999", "9" * 5000):
        assert parse_idx(bad) is None, bad


def test_the_gpus_slurm_manages_on_each_node():
    real = (FIXTURES / "sinfo-N-G-22.05.txt").read_text()
    assert parse_node_gpus(real) == {"vm": 4}
    assert parse_node_gpus("gpu01 gpu:a100:8(S:0-1)\ngpu02 gpu:a100:2,gpu:v100:2\n"
                           "cpu01 (null)\nmps01 mps:100,gpu:1\n") == {
        "gpu01": 8, "gpu02": 4, "cpu01": 0, "mps01": 1}


def gpu(index: int, minor, *procs: Process, mig: str | None = None) -> Device:
    return Device(index=index, vendor="nvidia", minor_number=minor, processes=procs,
                  mig_mode=mig)


def grant(*idx: int, node_gpus: int | None = 4) -> GpuGrant:
    return GpuGrant(frozenset(idx), node_gpus)


def of_job(job: str, pid: int = 1) -> Process:
    return Process(pid=pid, job=Job("slurm", job))


def test_indices_count_minor_numbers_not_nvml_indices():
    # NVML orders by bus id; these minors were given in another order (as jobstats#34 saw)
    devices = (gpu(0, 3), gpu(1, 2), gpu(2, 0), gpu(3, 1))
    assert devices_by_gres(devices, grant(0, 1)) == frozenset({2, 3})
    # every GPU Slurm's: the k-th smallest minor, also where the minors skip one
    assert devices_by_gres((gpu(0, 0), gpu(1, 2)), grant(1, node_gpus=2)) == frozenset({1})


@pytest.mark.parametrize("devices, given", [
    ((gpu(0, 0), gpu(1, None)), grant(0, node_gpus=2)),  # a minor not read (a lost GPU, old agent)
    ((gpu(0, 0), gpu(1, 1)), grant(2, node_gpus=2)),  # more than the node has
    ((gpu(0, 0), gpu(1, 1), gpu(2, 2), gpu(3, 3)), grant(0, node_gpus=2)),  # gres.conf names 2
    ((gpu(0, 0), gpu(1, 1)), grant(0, node_gpus=None)),  # sinfo did not say
    ((gpu(0, 0), gpu(1, "1")), grant(0, node_gpus=2)),  # a liar's minor
    ((gpu(0, 1), gpu(1, 1)), grant(0, node_gpus=2)),  # not one per GPU
    ((gpu(0, 0, mig="enabled"), gpu(1, 1)), grant(0, node_gpus=2)),  # GRES count MIG slices
    ((Device(index=0, vendor="huawei"),), grant(0, node_gpus=1)),
])
def test_no_guess_where_the_minors_do_not_tell(devices, given):
    assert devices_by_gres(devices, given) is None


def snap(*devices: Device) -> Snapshot:
    return Snapshot(host="n1", time=1.0, backend="nvml", devices=devices)


def test_a_jobs_gpus_include_those_it_runs_nothing_on():
    node = snap(gpu(0, 0, of_job("42")), gpu(1, 1), gpu(2, 2, of_job("7")), gpu(3, 3))
    assert job_devices(node, "42", grant(0, 1)) == frozenset({0, 1})
    assert job_devices(node, "42") == frozenset({0})  # no GRES: by its processes
    kept = only_jobs(node, {"42", "7"}, {"42": grant(0, 1)})
    assert [d.index for d in kept.devices] == [0, 1, 2]


def test_a_job_running_where_its_indices_do_not_point_is_shown_by_its_processes():
    """Slurm's numbering and the node's GPUs disagree (a gres.conf listing its files in another
    order): the indices are not believed, and nothing the job does not run on is shown."""
    node = snap(gpu(0, 0), gpu(1, 1), gpu(2, 2, of_job("42")), gpu(3, 3))
    assert job_devices(node, "42", grant(0, 1)) == frozenset({2})


def test_the_view_applies_each_nodes_own_grant():
    from gputop.cluster.node import NodeStatus

    class Inner:
        def statuses(self):
            return [NodeStatus(host, "ok", "agent", "", data=snap(gpu(0, 0), gpu(1, 1)), seq=1)
                    for host in ("n1", "n2")]

    view = JobView(Inner(), {"42"}, {"n1": {"42": grant(1, node_gpus=2)},
                                     "n2": {"42": grant(0, node_gpus=2)}})
    assert [[d.index for d in s.snapshot.devices] for s in view.statuses()] == [[1], [0]]


def test_job_gpus_asks_scontrol_and_sinfo_once_each(monkeypatch):
    calls = []

    def run(argv):
        calls.append(argv)
        if argv[:3] == ["scontrol", "show", "hostnames"]:
            return {"gpu[01-02]": "gpu01\ngpu02\n", "gpu03": "gpu03\n"}[argv[3]]
        if argv[0] == "sinfo":
            return "gpu01 gpu:a100:4(S:0-1)\ngpu02 gpu:a100:4(S:0-1)\ngpu03 gpu:8\n"
        return ("     Nodes=gpu[01-02] CPU_IDs=0-7 Mem=0 GRES=gpu:a100:2(IDX:0,3)\n"
                "     Nodes=gpu03 CPU_IDs=0-7 Mem=0 GRES=gpu:1(IDX:5)\n")

    monkeypatch.setattr(slurm, "_run", run)
    assert slurm.job_gpus("4242") == {"gpu01": grant(0, 3), "gpu02": grant(0, 3),
                                      "gpu03": grant(5, node_gpus=8)}
    assert calls[0] == ["scontrol", "show", "job", "-d", "4242"]
    assert calls[1] == ["sinfo", "-N", "-h", "-n", "gpu[01-02],gpu03", "-o", "%N %G"]
    assert len(calls) == 4  # and one hostnames per node group


def test_a_job_slurm_no_longer_describes_falls_back_to_its_processes(monkeypatch):
    """A job that ended between squeue and scontrol: no grant, not an error for the others."""
    from gputop.commands.cluster import SlurmJobs

    def job_gpus(job):
        if job == "1":
            raise slurm.SlurmError("scontrol: slurm_load_jobs error: Invalid job id specified")
        return {"n1": grant(0)}

    monkeypatch.setattr(slurm, "job_gpus", job_gpus)
    jobs = SlurmJobs(jobs={"1": ["n1"], "2": ["n1"]})
    assert jobs.gres() == {"n1": {"2": grant(0)}}


def test_slurm_is_asked_once_for_the_jobs_nodes_and_gpus(monkeypatch):
    """`gputop cluster --slurm J --slurm-me`: the host list, the screen and --once all read the
    same answers; squeue and scontrol run once each, however often they are read."""
    from gputop.commands.cluster import SlurmJobs

    calls = []

    def answer(name, value):
        return lambda *args: calls.append((name, *args)) or value

    monkeypatch.setattr(slurm, "job_nodes", answer("job_nodes", ["n1", "n2"]))
    monkeypatch.setattr(slurm, "my_jobs", answer("my_jobs", {"8": ["n2", "n3"]}))
    monkeypatch.setattr(slurm, "job_gpus", answer("job_gpus", {"n2": grant(0)}))
    jobs = SlurmJobs("7", mine=True)
    for _ in range(2):
        assert jobs.jobs() == {"7": ["n1", "n2"], "8": ["n2", "n3"]}
        assert jobs.nodes() == ["n1", "n2", "n3"]
        assert jobs.gres() == {"n2": {"7": grant(0), "8": grant(0)}}
    assert calls == [("job_nodes", "7"), ("my_jobs",), ("job_gpus", "7"), ("job_gpus", "8")]
    assert SlurmJobs().jobs() == {} and SlurmJobs().nodes() == []  # neither option: no Slurm


@pytest.mark.parametrize("job", ["1;reboot", "-d"])
def test_job_gpus_refuses_what_is_not_a_job_id(job):
    with pytest.raises(slurm.SlurmError, match="not a Slurm job id"):
        slurm.job_gpus(job)


