"""A Slurm job's GPUs from its GRES indices (``scontrol show job -d``'s IDX), matched to a node's
GPUs by minor number, and checked against the processes' own job attribution."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop.cluster import slurm
from gputop.cluster.slurm import devices_by_gres, parse_idx, parse_job_gres
from gputop.commands.cluster import JobView, job_devices, only_jobs
from gputop.model import Device, Job, Process, Snapshot

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"


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


def gpu(index: int, minor: int | None, *procs: Process) -> Device:
    return Device(index=index, vendor="nvidia", minor_number=minor, processes=procs)


def of_job(job: str, pid: int = 1) -> Process:
    return Process(pid=pid, job=Job("slurm", job))


def test_indices_count_minor_numbers_not_nvml_indices():
    # NVML orders by bus id; these minors were given in another order (as jobstats#34 saw)
    devices = (gpu(0, 3), gpu(1, 2), gpu(2, 0), gpu(3, 1))
    assert devices_by_gres(devices, frozenset({0, 1})) == frozenset({2, 3})
    # a node whose minors skip one (a GPU gone since boot): IDX k is the k-th smallest
    assert devices_by_gres((gpu(0, 0), gpu(1, 2)), frozenset({1})) == frozenset({1})


def test_no_guess_where_the_minors_do_not_tell():
    assert devices_by_gres((gpu(0, 0), gpu(1, None)), frozenset({0})) is None  # not read
    assert devices_by_gres((gpu(0, 0), gpu(1, 1)), frozenset({2})) is None  # more than the node
    huawei = Device(index=0, vendor="huawei")
    assert devices_by_gres((huawei,), frozenset({0})) is None


def snap(*devices: Device) -> Snapshot:
    return Snapshot(host="n1", time=1.0, backend="nvml", devices=devices)


def test_a_jobs_gpus_include_those_it_runs_nothing_on():
    node = snap(gpu(0, 0, of_job("42")), gpu(1, 1), gpu(2, 2, of_job("7")), gpu(3, 3))
    assert job_devices(node, "42", frozenset({0, 1})) == frozenset({0, 1})
    assert job_devices(node, "42") == frozenset({0})  # no GRES: by its processes
    kept = only_jobs(node, {"42", "7"}, {"42": frozenset({0, 1})})
    assert [d.index for d in kept.devices] == [0, 1, 2]


def test_a_job_running_where_its_indices_do_not_point_is_shown_by_its_processes():
    """Slurm's numbering and the node's GPUs disagree (a gres.conf listing its files in another
    order): the indices are not believed, and nothing the job does not run on is shown."""
    node = snap(gpu(0, 0), gpu(1, 1), gpu(2, 2, of_job("42")), gpu(3, 3))
    assert job_devices(node, "42", frozenset({0, 1})) == frozenset({2})


def test_the_view_applies_each_nodes_own_indices():
    from gputop.cluster.node import NodeStatus

    class Inner:
        def statuses(self):
            return [NodeStatus(host, "ok", "agent", "", data=snap(gpu(0, 0), gpu(1, 1)), seq=1)
                    for host in ("n1", "n2")]

    view = JobView(Inner(), {"42"}, {"n1": {"42": frozenset({1})}, "n2": {"42": frozenset({0})}})
    assert [[d.index for d in s.snapshot.devices] for s in view.statuses()] == [[1], [0]]


def test_job_gpus_asks_scontrol_and_expands_the_node_list(monkeypatch):
    calls = []

    def run(argv):
        calls.append(argv)
        if argv[:3] == ["scontrol", "show", "hostnames"]:
            return {"gpu[01-02]": "gpu01\ngpu02\n", "gpu03": "gpu03\n"}[argv[3]]
        return ("     Nodes=gpu[01-02] CPU_IDs=0-7 Mem=0 GRES=gpu:a100:2(IDX:0,3)\n"
                "     Nodes=gpu03 CPU_IDs=0-7 Mem=0 GRES=gpu:1(IDX:5)\n")

    monkeypatch.setattr(slurm, "_run", run)
    assert slurm.job_gpus("4242") == {"gpu01": frozenset({0, 3}), "gpu02": frozenset({0, 3}),
                                      "gpu03": frozenset({5})}
    assert calls[0] == ["scontrol", "show", "job", "-d", "4242"]


@pytest.mark.parametrize("job", ["1;reboot", "-d"])
def test_job_gpus_refuses_what_is_not_a_job_id(job):
    with pytest.raises(slurm.SlurmError, match="not a Slurm job id"):
        slurm.job_gpus(job)


@pytest.mark.parametrize("flag", [["--slurm", "42"], ["--slurm-me"]])
def test_slurm_with_the_prometheus_view_is_one_line(flag):
    """The Prometheus view has no node snapshot to find a job's GPUs in: refused, not ignored."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "gputop", "cluster", "--prometheus",
                          "http://127.0.0.1:1", *flag, "--once"],
                         cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == ("gputop: --slurm and --slurm-me watch a job's nodes over SSH; "
                          "they do not go with --prometheus\n")
