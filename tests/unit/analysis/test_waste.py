"""The idle-allocated ledger (gputop.analysis.waste) over snapshots at virtual times."""

from __future__ import annotations

import pytest

from gputop.analysis.hints import IDLE_MIN_MEMORY_MIB, IDLE_UTIL_PCT
from gputop.analysis.waste import IDLE_MAX_GAP_S, WasteLedger
from gputop.core.model import Device, Job, MigInstance, Process, Saturation, Snapshot

GIB = 1024.0


def proc(pid: int, mem: float = 4 * GIB, user: str = "alice", started: float = 100.0,
         job: str | None = "4242", command: str = "python train.py", sm: float | None = None):
    return Process(pid=pid, user=user, gpu_memory_mib=mem, started=started, command=command,
                   job=Job("slurm", job) if job else None, sm_pct=sm)


def dev(util: float | None = 0.0, procs=(), energy: float | None = None,
        power: float | None = None, sm_active: float | None = None, index: int = 0, mig=()):
    return Device(index=index, utilization_gpu_pct=util, processes=tuple(procs), energy_j=energy,
                  power_draw_w=power, saturation=Saturation(sm_active_pct=sm_active),
                  mig_instances=tuple(mig))


def snap(t: float, *devices: Device) -> Snapshot:
    return Snapshot(host="n", time=t, backend="test", devices=devices)


def fold(*snaps: Snapshot) -> WasteLedger:
    ledger = WasteLedger()
    for s in snaps:
        ledger.add(s)
    return ledger


def test_idle_below_the_threshold_counts_and_above_does_not():
    p = proc(1)
    idle = fold(snap(0, dev(IDLE_UTIL_PCT, [p])), snap(2, dev(IDLE_UTIL_PCT, [p])))
    assert idle.of(p).seconds == 2.0
    busy = fold(snap(0, dev(IDLE_UTIL_PCT + 1, [p])), snap(2, dev(IDLE_UTIL_PCT + 1, [p])))
    assert busy.of(p) is None


def test_gpm_sm_activity_wins_over_utilization():
    p = proc(1)
    # Utilization says busy, GPM's SM active says idle: GPM is the finer measure.
    ledger = fold(snap(0, dev(50.0, [p], sm_active=0.2)), snap(1, dev(50.0, [p], sm_active=0.2)))
    assert ledger.of(p).seconds == 1.0


def test_less_memory_than_the_floor_is_not_held():
    p = proc(1, mem=IDLE_MIN_MEMORY_MIB - 1)
    assert fold(snap(0, dev(0.0, [p])), snap(1, dev(0.0, [p]))).of(p) is None


def test_no_activity_reading_is_unknown_not_idle():
    p = proc(1)
    ledger = fold(snap(0, dev(None, [p])), snap(3, dev(None, [p])))
    assert ledger.of(p) is None
    assert ledger.unknown_s == {0: 3.0}


def test_a_gap_counts_at_most_the_cap_and_its_energy_scales_down():
    p = proc(1)
    ledger = fold(snap(0, dev(0.0, [p], energy=0.0)),
                  snap(3600, dev(0.0, [p], energy=360_000.0)))  # 100 W for an hour
    t = ledger.of(p)
    assert t.seconds == IDLE_MAX_GAP_S
    assert t.energy == pytest.approx(100.0 * IDLE_MAX_GAP_S)


def test_energy_is_split_by_memory_share():
    a, b = proc(1, mem=6 * GIB), proc(2, mem=2 * GIB, user="bob", job="7")
    ledger = fold(snap(0, dev(0.0, [a, b], energy=1000.0)),
                  snap(10, dev(0.0, [a, b], energy=1800.0)))
    assert ledger.of(a).energy == pytest.approx(600.0)
    assert ledger.of(b).energy == pytest.approx(200.0)
    assert ledger.of(a).seconds == ledger.of(b).seconds == 10.0  # each held it the whole time
    users = {r["user"]: r for r in ledger.summary()["users"]}
    assert users["alice"]["idle_energy_j"] == pytest.approx(600.0)
    assert users["bob"]["idle_energy_j"] == pytest.approx(200.0)


def test_power_times_interval_without_a_counter_and_none_without_either():
    p = proc(1)
    powered = fold(snap(0, dev(0.0, [p], power=80.0)), snap(5, dev(0.0, [p], power=80.0)))
    assert powered.of(p).energy == pytest.approx(400.0)
    dark = fold(snap(0, dev(0.0, [p])), snap(5, dev(0.0, [p])))
    assert dark.of(p).seconds == 5.0 and dark.of(p).energy is None


def test_a_reused_pid_is_a_new_process():
    old, new = proc(1, started=100.0), proc(1, started=900.0)
    ledger = fold(snap(1000, dev(0.0, [old])), snap(1010, dev(0.0, [old])),
                  snap(1020, dev(0.0, [new])))
    assert ledger.of(old).seconds == 10.0
    assert ledger.of(new).seconds == 10.0


def test_jobs_by_scheduler_and_inferred_launches_are_marked():
    slurm = proc(1)
    loose = proc(2, job=None, user="bob", command="python serve.py --rank 0")
    ledger = fold(snap(0, dev(0.0, [slurm]), dev(0.0, [loose], index=1)),
                  snap(4, dev(0.0, [slurm]), dev(0.0, [loose], index=1)))
    jobs = {r["job"]: r for r in ledger.summary()["jobs"]}
    assert jobs["job 4242"] == {"job": "job 4242", "inferred": False, "user": "alice",
                                "idle_s": 4.0, "idle_energy_j": None}
    assert jobs["python serve.py"]["inferred"] is True
    assert jobs["python serve.py"]["user"] == "bob"


def test_mig_instances_are_judged_alone():
    idle_p, busy_p = proc(1), proc(2, user="bob", job="7")
    instances = (MigInstance(1, 0, saturation=Saturation(sm_active_pct=0.0), processes=(idle_p,)),
                 MigInstance(2, 0, saturation=Saturation(sm_active_pct=80.0), processes=(busy_p,)),
                 MigInstance(3, 0, processes=(proc(3, user="carol", job="8"),)))
    d = dev(None, energy=0.0, mig=instances)
    d2 = dev(None, energy=300.0, mig=instances)
    ledger = fold(snap(0, d), snap(3, d2))
    assert ledger.of(idle_p).seconds == 3.0
    assert ledger.of(idle_p).energy == pytest.approx(100.0)  # a third of the memory
    assert ledger.of(busy_p) is None
    assert ledger.unknown_s == {0: 3.0}  # instance 3 has no GPM reading


def test_repeated_and_older_samples_are_not_counted():
    p = proc(1)
    ledger = fold(snap(0, dev(0.0, [p])), snap(5, dev(0.0, [p])), snap(5, dev(0.0, [p])),
                  snap(2, dev(0.0, [p])), snap(3, dev(0.0, [p])))
    assert ledger.of(p).seconds == 6.0


def test_annotate_puts_the_figures_on_each_process():
    p, q = proc(1), proc(2, mem=10.0)
    ledger = WasteLedger()
    ledger.annotate(snap(0, dev(0.0, [p, q], power=50.0)))
    out = ledger.annotate(snap(2, dev(0.0, [p, q], power=50.0)))
    got = {x.pid: (x.idle_s, x.idle_energy_j) for x in out.devices[0].processes}
    assert got[1][0] == 2.0 and got[1][1] == pytest.approx(100.0 * 4 * GIB / (4 * GIB + 10))
    assert got[2][0] == 2.0


def test_the_idle_allocated_hint_names_the_job_its_user_and_the_idle_time():
    from gputop.analysis.hints import IDLE_MINUTES_S, IdleRuns, analyze

    ledger, runs, history = WasteLedger(), IdleRuns(), []
    for t in range(0, int(IDLE_MINUTES_S) + 60, 5):
        s = ledger.annotate(snap(1000.0 + t, dev(0.0, [proc(1, started=1000.0)], index=3)))
        runs.add(s)
        history.append(s)
    (hint,) = [h for h in analyze(history[-13:], runs) if h.code == "idle-allocated"]
    assert hint.message.startswith("GPU 3 held idle 6 min by job 4242 (alice): 4.0 GiB held")


def test_the_idle_rank_scenario_matches_the_simulators_ground_truth():
    """Rank 3 of job 4242 holds memory idle: the ledger counts every second of the run against
    it (and none against its busy peers), and its idle energy is what the simulated GPU's
    energy counter moved by, the process being alone on it."""
    from gputop.analysis.pipeline import default_analyzer
    from gputop.backends.base import BackendOptions
    from gputop.backends.sim.backend import SimBackend
    from gputop.sampler import Sampler

    backend = SimBackend(BackendOptions(scenario="idle-rank", seed=0, sim_speed=1e6))
    backend.open()
    try:
        ledger = WasteLedger()
        sampler = Sampler(backend, interval=1.0, analyze=default_analyzer(),
                          annotate=ledger.annotate)
        history: list[Snapshot] = []
        sampler.subscribe(history.append)
        snap = sampler.run_for(120.0)
    finally:
        backend.close()
    assert snap is not None
    first, last = history[0].device(3), snap.device(3)
    assert first is not None and last is not None and last.energy_j and first.energy_j
    (rank3,) = last.processes
    assert rank3.idle_s == pytest.approx(snap.time - history[0].time)
    assert rank3.idle_energy_j == pytest.approx(last.energy_j - first.energy_j)
    assert all(p.idle_s == 0.0 for d in snap.devices[:3] for p in d.processes)
    (job,) = ledger.summary()["jobs"]
    assert (job["job"], job["user"], job["inferred"]) == ("job 4242", "alice", False)
    hint = next(h for h in snap.hints if h.code == "idle-allocated")
    assert hint.device == 3 and hint.message.startswith("GPU 3 held idle 2 min by job 4242 (alice)")
