"""The hints read the history's window (typed columns, gputop.history.window), not whole
snapshots: what they re-derive from the columns judges as the snapshots did, and the sampler's
way (through the history) gives the hints a list of the same snapshots gives."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gputop.analysis import hints as H
from gputop.analysis.pipeline import default_analyzer
from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.core.model import Device, MigInstance, Process, Saturation, Snapshot
from gputop.history import History
from gputop.sampler import Sampler
from tests.support.hint_fixtures import NOW, codes, device, history, proc

LONG_AGO = NOW - 9 * 3600


def _instance(sm: float) -> MigInstance:
    holder = Process(pid=7, gpu_memory_mib=6000.0, started=LONG_AGO, gpu_instance_id=12,
                     compute_instance_id=0)
    return MigInstance(gpu_instance_id=12, compute_instance_id=0, profile="1g.10gb",
                       memory_total_mib=9984.0, memory_used_mib=6112.0, processes=(holder,),
                       saturation=Saturation(source="gpm", sm_active_pct=sm))


def _mig_gpu(instances: tuple[MigInstance, ...]) -> Device:
    return Device(index=3, mig_mode="enabled", utilization_gpu_pct=None,
                  mig_instances=instances, processes=tuple(p for i in instances for p in i.processes))


def test_an_instance_missing_from_one_sample_of_the_window_is_not_idle_allocated():
    def present(i: int) -> list[Device]:
        return [_mig_gpu((_instance(0.0),))]

    def gone_once(i: int) -> list[Device]:
        return [_mig_gpu(() if i == 40 else (_instance(0.0),))]

    assert "idle-allocated" in codes(H.analyze(history(61, present)))
    # instance_of found nothing in that sample: not idle there, so not idle all the window
    assert "idle-allocated" not in codes(H.analyze(history(61, gone_once)))


def test_an_instance_is_judged_by_its_first_reading_of_a_sample():
    def twice(i: int) -> list[Device]:
        return [_mig_gpu((_instance(0.0), _instance(80.0)))]

    def busy_first(i: int) -> list[Device]:
        return [_mig_gpu((_instance(80.0), _instance(0.0)))]

    assert "idle-allocated" in codes(H.analyze(history(61, twice)))
    assert "idle-allocated" not in codes(H.analyze(history(61, busy_first)))


def test_idle_takes_the_busiest_process_sm_and_ignores_the_unreported():
    def make(sms: tuple[float | None, ...]):
        procs = tuple(proc(pid=10 + k, sm=sm, mem=4000.0, started=LONG_AGO)
                      for k, sm in enumerate(sms))
        return lambda i: [device(utilization_gpu_pct=0.0, saturation=Saturation(),
                                 processes=procs)]

    assert "idle-allocated" in codes(H.analyze(history(61, make((None, 1.0)))))
    assert "idle-allocated" not in codes(H.analyze(history(61, make((None, 1.0, 1.5)))))


def test_the_slow_clock_is_explained_by_every_reason_its_readings_held():
    def job(reasons_of_five):
        def make(i: int) -> list[Device]:
            return [device(g, clock_sm_mhz=1500.0 if g == 5 else 1980.0,
                           clock_event_reasons=reasons_of_five(i) if g == 5 else ())
                    for g in range(8)]
        return history(30, make)

    def straggler(h) -> str:
        (found,) = [x.message for x in H.analyze(h) if x.code == "straggler"]
        return found

    both = straggler(job(lambda i: ("sw_thermal_slowdown",) if i % 2 else ("gpu_idle",
                                                                            "sw_power_cap")))
    assert "(sw_power_cap, sw_thermal_slowdown)" in both  # sorted, gpu_idle left out
    assert "(no reason reported)" in straggler(job(lambda i: None if i % 2 else ()))
    assert "(its driver reports no clock-event reasons)" in straggler(job(lambda i: None))


def test_a_gpu_that_stopped_answering_is_still_a_peer_while_the_window_holds_its_readings():
    # GPU 2 ran the job slowly for 40 s, then was lost: its readings still count for its
    # peers' median, so GPU 0, slower than GPU 1 alone, is not the job's straggler
    def make(lost_at: int):
        def devices(i: int) -> list[Device]:
            return [device(0, clock_sm_mhz=0.85 * 1980.0), device(1),
                    replace(device(2, clock_sm_mhz=0.5 * 1980.0),
                            status="lost" if i >= lost_at else "ok")]
        return devices

    assert "straggler" not in codes(H.analyze(history(61, make(40))), 0)
    assert "straggler" in codes(H.analyze(history(61, make(0))), 0)  # never seen: no peer
    found = H.analyze(history(61, make(40)))
    assert [x.code for x in found if x.device == 2] == ["device-unhealthy"]


@pytest.mark.parametrize("scenario, interval", [
    ("straggler", 1.0), ("mixed", 1.0), ("idle-rank", 1.0), ("mig", 1.0), ("gpu-lost", 1.0),
    ("power-capped", 2.5), ("xid-thermal", 1.0)])
def test_the_samplers_hints_read_through_the_history_are_those_of_its_snapshots(scenario,
                                                                              interval):
    """Every tick: the hints through the history's window equal the hints over the very
    snapshots the sampler took (at 1 s and slower the window keeps each of them)."""
    backend = SimBackend(BackendOptions(scenario=scenario, seed=0, sim_speed=1e7))
    backend.open()
    sampler = Sampler(backend, interval=interval, history=History(interval=interval),
                      analyze=default_analyzer())
    taken: list[Snapshot] = []
    runs, xids = H.IdleRuns(), H.XidLog()
    mismatched: list[float] = []
    fired: set[str] = set()

    def check(snap: Snapshot) -> None:
        bare = replace(snap, hints=())
        taken.append(bare)
        runs.add(bare)
        xids.add(bare)
        over_snapshots = H.analyze(taken, runs, xids)
        if [h for h in snap.hints if h.code in H.ADVICE] != over_snapshots:
            mismatched.append(snap.time)
        fired.update(h.code for h in over_snapshots)

    sampler.subscribe(check)
    try:
        sampler.run_for(200.0)
    finally:
        backend.close()
    assert mismatched == []
    assert fired  # each scenario fires some hint: the comparison compared something
