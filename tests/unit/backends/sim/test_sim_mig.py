"""The simulator's MIG scenarios: instances as an H100's driver lays them out, and a parent whose
readings follow from its instances'."""

import re

import pytest

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import RESERVED_MIB, SimBackend
from gputop.backends.sim.mig import place
from gputop.backends.sim.scenario import parse
from tests.support.paths import FIXTURES

MIG_FIX = FIXTURES / "mig"


def sim(scenario="mig", **kw) -> SimBackend:
    backend = SimBackend(BackendOptions(scenario=scenario, **kw))
    backend.open()
    return backend


def _captured_mig_devices() -> list[tuple[int, int, int, int, int]]:
    """(GI, CI, MIG dev, MiB total, SMs) of each row of a real H100's ``MIG devices`` table."""
    rows = re.findall(r"^\|\s+0\s+(\d+)\s+(\d+)\s+(\d+)\s+\|\s+\d+MiB /\s+(\d+)MiB\s+\|\s+(\d+) ",
                      (MIG_FIX / "table_1xH100-MIG_590.48.01_load.txt").read_text(), re.M)
    return [tuple(map(int, row)) for row in rows]


def test_placement_and_sizes_are_what_a_real_h100_shows():
    # the capture's GPU was split 3g.40gb + 2g.20gb + 2x 1g.10gb, created in that order
    captured = _captured_mig_devices()
    assert len(captured) == 4
    slots = place(["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"])
    assert [(s.gpu_instance_id, s.compute_instance_id, s.index, s.profile.memory_total_mib,
             s.profile.sm_count) for s in slots] == captured
    assert [s.gpu_instance_id for s in place(["1g.10gb"] * 7)] == list(range(7, 14))


@pytest.mark.parametrize("layout, why", [
    (["1g.10gb"] * 8, "no room left for a 1g.10gb"),
    (["2g.20gb"] * 4, "no room left for a 2g.20gb"),
    (["3g.40gb"] * 3, "no room left for a 3g.40gb"),
    (["5g.50gb"], "unknown MIG profile '5g.50gb'"),
])
def test_an_impossible_layout_is_refused_by_name(layout, why):
    with pytest.raises(ValueError, match=why):
        place(layout)


def _scenario(mig: dict, job: dict) -> dict:
    return {"part": "h100-sxm", "count": 2, "mig": mig,
            "job": [{"name": "j", "user": "u", "command": "c", "memory_mib": 100, **job}]}


@pytest.mark.parametrize("mig, job, why", [
    ({"0": ["1g.10gb"]}, {"gpus": [0]}, "runs on a MIG GPU without naming its mig_devices"),
    ({"0": ["1g.10gb"]}, {"gpus": [1], "mig_devices": [0]}, "GPU 1, which has no \\[mig\\]"),
    ({"0": ["1g.10gb"]}, {"gpus": [0], "mig_devices": [1]}, "MIG device 1 of GPU 0, which has 1"),
    ({"2": ["1g.10gb"]}, {"gpus": [0]}, "\\[mig\\] names a GPU outside 0..1"),
])
def test_a_job_that_cannot_run_where_it_says_is_refused(mig, job, why):
    with pytest.raises(ValueError, match=why):
        parse(_scenario(mig, job), "t")


def test_the_mig_scenario_splits_four_gpus_and_leaves_four_whole():
    snap = sim().sample()
    layouts = [[m.profile for m in d.mig_instances] for d in snap.devices]
    assert layouts[0] == layouts[1] == ["1g.10gb"] * 7
    assert layouts[2] == ["3g.40gb", "2g.20gb", "2g.20gb"]
    assert "1g.10gb+me" in layouts[3]
    assert layouts[4:] == [[]] * 4
    assert [d.mig_mode for d in snap.devices] == ["enabled"] * 4 + ["disabled"] * 4
    for dev in snap.devices[4:]:
        assert dev.utilization_gpu_pct is not None and dev.processes


def test_a_mig_parent_is_the_sum_of_its_instances():
    snap = sim(sim_speed=50).sample()
    uuids = set()
    for dev in snap.devices[:4]:
        insts = dev.mig_instances
        # the driver reports no utilization on a MIG parent: nvidia-smi prints [N/A]
        assert dev.utilization_gpu_pct is None and dev.utilization_memory_pct is None
        assert dev.memory_used_mib == sum(m.memory_used_mib for m in insts)
        assert dev.memory_free_mib == dev.memory_total_mib - dev.memory_used_mib - RESERVED_MIB
        assert all(m.memory_used_mib <= m.memory_total_mib for m in insts)
        assert sum(m.memory_total_mib for m in insts) <= dev.memory_total_mib
        # the parent's processes are the union of its instances', each with its instance ids
        assert dev.processes == tuple(p for m in insts for p in m.processes)
        for m in insts:
            assert m.processes, f"GPU {dev.index} instance {m.index} has no job"
            assert {(p.gpu_instance_id, p.compute_instance_id) for p in m.processes} == \
                {(m.gpu_instance_id, m.compute_instance_id)}
            assert m.uuid.startswith("MIG-") and m.saturation.source == "sim"
            uuids.add(m.uuid)
        # the parent's GPM is its instances' weighted by their SMs
        weighted = sum(m.saturation.sm_active_pct * m.sm_count for m in insts)
        assert dev.saturation.sm_active_pct == pytest.approx(
            weighted / sum(m.sm_count for m in insts), abs=0.06)
    assert len(uuids) == 7 + 7 + 3 + 5


def test_one_idle_instance_holds_memory_and_computes_nothing():
    snap = sim().sample()
    idle = [(d.index, m) for d in snap.devices for m in d.mig_instances
            if m.saturation.sm_active_pct == 0.0]
    assert len(idle) == 1
    gpu, inst = idle[0]
    assert inst.memory_used_mib > 5000 and inst.processes[0].user == "frank"
    assert [m.saturation.sm_active_pct > 0 for m in snap.devices[gpu].mig_instances].count(True) == 4


def test_the_parent_power_and_clock_follow_its_instances_under_a_cap():
    backend = sim(sim_speed=1)
    free = backend.sample().device(2)
    backend.set_power_limit(2, 300)
    capped = backend.sample().device(2)
    # every instance shares the parent's clock and power limit: a cap slows all their jobs
    assert free.sim["work_rate"] == pytest.approx(1.0, abs=1e-6)
    assert capped.sim["work_rate"] < 0.97
    assert capped.power_draw_w <= 300 * 1.02 < free.power_draw_w
    # a GPU whose instances run light jobs draws less than one running a big job in each
    light = backend.sample().device(3)
    assert light.power_draw_w < free.power_draw_w


def test_eight_gpus_of_seven_instances_each():
    snap = sim("mig-dense").sample()
    assert [len(d.mig_instances) for d in snap.devices] == [7] * 8
    assert sum(len(d.processes) for d in snap.devices) == 56


