"""The cross-node comparison of one job's GPUs (gputop/cluster/job_view.py): pure, no device."""

from __future__ import annotations

from dataclasses import replace

from gputop.cluster.job_view import (
    job_gpus,
    render_report,
    report,
    report_document,
    report_from,
    stragglers,
)
from gputop.cluster.node import NodeStatus
from gputop.cluster.protocol import clean_document
from gputop.cluster.slurm import GpuGrant
from gputop.core.model import Device, Job, Process, Snapshot, snapshot_from_json, snapshot_to_json


def gpu(index: int, clock: float | None = 1980, util: float | None = 97,
        power: float | None = 690, reasons: tuple[str, ...] | None = ()) -> Device:
    return Device(index=index, vendor="nvidia", status="ok", utilization_gpu_pct=util,
                  clock_sm_mhz=clock, clock_sm_max_mhz=1980, power_draw_w=power,
                  power_limit_w=700, temperature_c=60, memory_used_mib=40000,
                  memory_total_mib=81559, clock_event_reasons=reasons)


def nodes(**devices: list[Device]) -> dict[str, Snapshot]:
    return {host: Snapshot(host=host, time=0.0, backend="sim", devices=tuple(devs))
            for host, devs in devices.items()}


def test_one_slow_gpu_on_one_node_is_flagged_with_its_reason():
    found = stragglers(job_gpus(nodes(
        n1=[gpu(0), gpu(1)],
        n2=[gpu(0), gpu(1, clock=1200, power=450, reasons=("sw_thermal_slowdown",))])))
    assert [(s.node, s.index) for s in found] == [("n2", 1)]
    assert found[0].reason == (
        "GPU 1 on n2 is the slow one of the 4 GPUs of its job: SM clock 61% of max while its "
        "peers run at 100% (sw_thermal_slowdown); the others wait for it")


def test_a_whole_slow_node_is_flagged_as_the_node():
    found = stragglers(job_gpus(nodes(
        n1=[gpu(0), gpu(1)], n2=[gpu(0, clock=1400), gpu(1, clock=1380)], n3=[gpu(0), gpu(1)])))
    assert [(s.node, s.index) for s in found] == [("n2", None)]
    assert found[0].reason.startswith("node n2 is the slow one of the 3 nodes of its job: SM "
                                      "clock 70% of max while its peers run at 100% (no reason "
                                      "reported)")


def test_a_busier_gpu_that_the_others_wait_for_is_flagged():
    found = stragglers(job_gpus(nodes(n1=[gpu(0, util=40)], n2=[gpu(0, util=95)],
                                      n3=[gpu(0, util=42)])))
    assert [(s.node, s.index) for s in found] == [("n2", 0)]
    assert "busy 95% while its peers are busy 41% and wait for it" in found[0].reason


def test_a_gpu_drawing_far_less_power_at_work_is_flagged():
    found = stragglers(job_gpus(nodes(n1=[gpu(0), gpu(1)], n2=[gpu(0, power=400), gpu(1)])))
    assert [(s.node, s.index) for s in found] == [("n2", 0)]
    assert "power 400 W while its peers draw 690 W" in found[0].reason


def test_all_alike_flags_nothing():
    assert stragglers(job_gpus(nodes(n1=[gpu(0), gpu(1)], n2=[gpu(0, clock=1900), gpu(1)]))) == []


def test_unknown_readings_are_no_deviation():
    unknown = gpu(1, clock=None, util=None, power=None, reasons=None)
    assert stragglers(job_gpus(nodes(n1=[gpu(0)], n2=[unknown]))) == []
    assert stragglers(job_gpus(nodes(n1=[gpu(0), unknown], n2=[gpu(0), gpu(1)]))) == []


def test_one_gpu_is_no_job_to_compare():
    assert stragglers(job_gpus(nodes(n1=[gpu(0, clock=500)]))) == []
    assert stragglers(job_gpus({"n1": nodes(n1=[gpu(0)])["n1"], "n2": None})) == []


def test_the_report_groups_gpus_by_node_and_flags_the_straggler():
    r = report("4242", nodes(n1=[gpu(1), gpu(0)], n2=[gpu(0), gpu(1, clock=1200)]))
    doc = report_document(r)
    assert [(n["host"], [g["index"] for g in n["gpus"]]) for n in doc["nodes"]] == [
        ("n1", [0, 1]), ("n2", [0, 1])]
    assert [g["straggler"] is not None for n in doc["nodes"] for g in n["gpus"]] == [
        False, False, False, True]
    assert [(s["node"], s["index"]) for s in doc["stragglers"]] == [("n2", 1)]
    lines = render_report(r).splitlines()
    assert lines[0] == "job 4242: 4 GPUs on 2 nodes"
    assert [line.endswith("  <") for line in lines[2:6]] == [False, False, False, True]
    assert lines[-1].startswith("straggler: GPU 1 on n2 is the slow one")


def test_a_whole_slow_node_flags_each_of_its_gpus_lines():
    r = report("7", nodes(n1=[gpu(0), gpu(1)], n2=[gpu(0, clock=1400), gpu(1, clock=1400)],
                          n3=[gpu(0), gpu(1)]))
    assert [r.flag(g) is not None for g in r.gpus] == [False, False, True, True, False, False]
    assert render_report(report("7", nodes(n1=[gpu(0)], n2=[gpu(0)]))).endswith("no straggler\n")


def test_the_multinode_straggler_scenario_is_the_slow_node_of_a_job_on_training():
    """The simulator's node of a two-node job whose GPU 1 throttles, beside two GPUs of the
    healthy `training` node: that GPU is the job's straggler, for its clock."""
    from dataclasses import replace

    from gputop.backends.base import BackendOptions
    from gputop.backends.sim.backend import SimBackend

    def sample(scenario: str) -> Snapshot:
        backend = SimBackend(BackendOptions(scenario=scenario, sim_speed=1000))
        backend.open()
        snap = backend.sample()
        return replace(snap, devices=tuple(d for d in snap.devices if d.index < 2))

    found = stragglers(job_gpus({"n1": sample("training"), "n2": sample("multinode-straggler")}))
    assert [(s.node, s.index) for s in found] == [("n2", 1)]
    assert "SM clock 72% of max" in found[0].reason and "sw_thermal_slowdown" in found[0].reason


def _status(host: str, *devices: Device) -> NodeStatus:
    """A node as the SSH transport holds it: the checked document, built on first use."""
    doc = snapshot_to_json(Snapshot(host=host, time=0.0, backend="sim", devices=devices))
    return NodeStatus(host=host, state="live", mode="agent", reason="", data=clean_document(doc))


def test_the_job_screen_builds_only_the_nodes_that_carry_the_job():
    """A node whose processes belong to other jobs, and where Slurm gave the job nothing, is
    passed over without building its snapshot; one Slurm gave the job GPUs on is read even
    before the job runs anything there."""
    ours = Process(pid=7, user="alice", name="train", job=Job("slurm", "42"))
    theirs = Process(pid=8, user="bob", name="serve", job=Job("slurm", "99"))
    running = _status("n1", replace(gpu(0), processes=(ours,)), gpu(1))
    other = _status("n2", replace(gpu(0), processes=(theirs,)))
    granted = _status("n3", *(replace(gpu(k), minor_number=k) for k in (0, 1)))
    got = report_from("42", [running, other, granted],
                      {"n3": {"42": GpuGrant(frozenset({1}), 2)}})
    assert sorted({g.node for g in got.gpus}) == ["n1", "n3"]
    assert "_snapshot" not in other.__dict__ and "_snapshot" in running.__dict__
    # a summary that does not know its node's jobs (Prometheus) passes nothing over
    unknown = NodeStatus(host="n4", state="live", mode="agent", reason="",
                         data=snapshot_from_json(snapshot_to_json(Snapshot(
                             host="n4", time=0.0, backend="sim",
                             devices=(replace(gpu(0), processes=(ours,)),)))))
    object.__setattr__(unknown, "_summary", replace(unknown.summary, jobs=None))
    assert {g.node for g in report_from("42", [unknown]).gpus} == {"n4"}
