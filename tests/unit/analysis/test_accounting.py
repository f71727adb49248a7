"""Job accounting (gputop.analysis.accounting), fed by the idle ledger over virtual samples."""

from __future__ import annotations

import pytest

from gputop.analysis.accounting import end_line
from gputop.analysis.waste import WasteLedger
from gputop.core.model import Device, Job, MigInstance, Process, Saturation, Snapshot

GIB = 1024.0


def proc(pid: int, mem: float = 4 * GIB, user: str = "alice", job: str | None = "4242",
         started: float = 50.0) -> Process:
    return Process(pid=pid, user=user, gpu_memory_mib=mem, started=started,
                   command="python train.py", job=Job("slurm", job) if job else None)


def dev(index: int, procs=(), util: float | None = 0.0, energy: float | None = None,
        mig=(), total: float | None = None) -> Device:
    return Device(index=index, uuid=f"GPU-{index}", utilization_gpu_pct=util,
                  processes=tuple(procs), energy_j=energy, mig_instances=tuple(mig),
                  memory_total_mib=total)


def fold(*snaps: tuple[float, tuple[Device, ...]]) -> WasteLedger:
    ledger = WasteLedger()
    for t, devices in snaps:
        ledger.add(Snapshot(host="n", time=t, backend="test", devices=devices))
    return ledger


def only(ledger: WasteLedger) -> dict:
    (rec,) = ledger.accounts.records()
    return rec


def test_gpu_seconds_idle_seconds_energy_and_mean_activity():
    a, b = proc(1), proc(2)
    rec = only(fold((0, (dev(0, [a], 90.0, 0.0), dev(1, [b], 0.0, 0.0))),
                    (10, (dev(0, [a], 90.0, 3000.0), dev(1, [b], 0.0, 1000.0))),
                    (20, (dev(0, [a], 30.0, 6000.0), dev(1, [b], 0.0, 2000.0)))))
    assert rec["gpu_s"] == 40.0  # two GPUs for 20 s
    assert rec["idle_gpu_s"] == 20.0  # GPU 1 all along
    assert rec["energy_j"] == 8000.0 and rec["idle_energy_j"] == 2000.0
    assert rec["sm_active_pct"] == pytest.approx((90 * 10 + 0 * 10 + 30 * 10 + 0 * 10) / 40)
    assert rec["gpus"] == ["GPU-0", "GPU-1"]
    assert rec["first_seen"] == 0 and rec["last_seen"] == 20 and rec["started"] == 50.0
    assert rec["peak_memory_mib"] == 8 * GIB


def test_two_processes_of_a_job_on_one_idle_gpu_count_its_seconds_once():
    a, b = proc(1), proc(2)
    ledger = fold((0, (dev(0, [a, b]),)), (5, (dev(0, [a, b]),)))
    assert only(ledger)["idle_gpu_s"] == 5.0
    assert ledger.summary()["users"] == [{"user": "alice", "idle_s": 5.0, "idle_energy_j": None}]


def test_a_mig_instance_counts_its_share_of_the_gpu():
    inst = MigInstance(1, 0, profile="1g.10gb", uuid="MIG-a", memory_total_mib=10 * GIB,
                       saturation=Saturation(sm_active_pct=40.0), processes=(proc(1),))
    rec = only(fold((0, (dev(0, mig=[inst], total=80 * GIB),)),
                    (8, (dev(0, mig=[inst], total=80 * GIB),))))
    assert rec["gpu_s"] == 1.0 and rec["gpus"] == ["MIG-a"] and rec["sm_active_pct"] == 40.0


def test_unmeasured_activity_is_no_mean_and_no_idle():
    rec = only(fold((0, (dev(0, [proc(1)], None),)), (4, (dev(0, [proc(1)], None),))))
    assert rec["gpu_s"] == 4.0 and rec["idle_gpu_s"] == 0.0 and rec["sm_active_pct"] is None
    assert rec["energy_j"] is None  # neither counter nor power read: not 0


def test_a_job_ends_when_its_last_process_leaves_and_is_reported_once():
    a, b = proc(1), proc(2)
    ledger = fold((0, (dev(0, [a]), dev(1, [b]))), (2, (dev(0, [a]), dev(1))))
    assert ledger.accounts.drain_ended() == []  # one process left, the job goes on
    ledger.add(Snapshot(host="n", time=4, backend="test", devices=(dev(0), dev(1))))
    (ended,) = ledger.accounts.drain_ended()
    assert ended["job"] == "job 4242" and ended["last_seen"] == 2 and ended["gpu_s"] == 2.0
    ledger.add(Snapshot(host="n", time=6, backend="test", devices=(dev(0), dev(1))))
    assert ledger.accounts.drain_ended() == []


def test_accounts_are_per_job_and_user_and_inferred_launches_are_marked():
    ledger = fold((0, (dev(0, [proc(1), proc(2, user="bob", job=None)]),)),
                  (3, (dev(0, [proc(1), proc(2, user="bob", job=None)]),)))
    recs = {r["job"]: r for r in ledger.accounts.records()}
    assert recs["job 4242"]["inferred"] is False and recs["job 4242"]["hpc_job"] == "4242"
    assert recs["python train.py"]["inferred"] is True
    assert recs["python train.py"]["user"] == "bob" and recs["python train.py"]["gpu_s"] == 3.0


def test_the_end_line_says_what_the_job_used_and_na_for_what_was_not_read():
    a, b = proc(1), proc(2)
    ledger = fold((0, (dev(0, [a], 80.0, 0.0), dev(1, [b], 0.0, 0.0))),
                  (1800, (dev(0, [a], 80.0, 1.8e6), dev(1, [b], 0.0, 0.9e6))),
                  (1810, (dev(0), dev(1))))
    (rec,) = ledger.accounts.drain_ended()  # 1800 s apart: the interval counts 60 s
    assert end_line(rec) == ("job 4242 (alice) ended after 30:00: 2 GPUs, 0.03 GPU-h, 0.02 idle"
                             " (50%), 0.03 kWh, SM 40%, peak 8.0 GiB")
    dark = fold((0, (dev(0, [a], None),)), (5, (dev(0, [a], None),))).accounts.records()[0]
    assert "N/A kWh, SM N/A" in end_line(dark)
