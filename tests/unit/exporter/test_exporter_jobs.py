"""The job accounting families (#30): one series per (job, user), the counters never going back
and kept after the job ends, what is held now served for present jobs only, so that a range
query over Prometheus gives each job's GPU time, energy, mean SM activity and peak memory."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from gputop.analysis.waste import WasteLedger
from gputop.core.model import Device, Job, Process, Snapshot
from gputop.core.units import MIB
from gputop.exporter import own
from gputop.exporter.server import Latest

ALICE = Process(pid=1, user="alice", gpu_memory_mib=8192, started=1.0, job=Job("slurm", "4242"))
BOB = Process(pid=2, user="bob", gpu_memory_mib=4096, started=1.0, command="python nb.py")
ALICE_LABELS = {"hostname": "n", "user": "alice", "hpc_job": "4242", "workload": "job 4242",
                "inferred": "false"}
BOB_LABELS = {"hostname": "n", "user": "bob", "hpc_job": "", "workload": "python nb.py",
              "inferred": "true"}
JOB_FAMILIES = (own.JOB_GPU_SECONDS, own.JOB_ENERGY, own.JOB_SM_ACTIVE, own.JOB_SM_MEASURED,
                own.JOB_FIRST_SEEN, own.JOB_LAST_SEEN, own.JOB_GPUS, own.JOB_MEMORY)


def sample(t: float, alice: bool = True) -> Snapshot:
    """Alice's job on GPUs 0 and 1 at 60 % and 100 W each; Bob's notebook idle on GPU 2, which
    reports no power nor energy."""
    mine = (ALICE,) if alice else ()
    return Snapshot(host="n", time=t, backend="test", devices=(
        Device(index=0, utilization_gpu_pct=60.0, power_draw_w=100.0, processes=mine),
        Device(index=1, utilization_gpu_pct=60.0, power_draw_w=100.0, processes=mine),
        Device(index=2, utilization_gpu_pct=0.0, processes=(BOB,))))


def scrape(ledger: WasteLedger, snap: Snapshot) -> dict[str, dict[str, float]]:
    """Each job family's samples, by the workload label, as the exporter's /metrics serves
    them (the account labels checked on the way)."""
    latest = Latest(own.Options(), "test", waste=ledger)
    latest.publish(ledger.annotate(snap))
    assert latest.body is not None
    out: dict[str, dict[str, float]] = {name: {} for name in JOB_FAMILIES}
    for family in text_string_to_metric_families(latest.body.decode()):
        for s in family.samples:
            if s.name in out:
                assert s.labels in (ALICE_LABELS, BOB_LABELS), s
                out[s.name][s.labels["workload"]] = s.value
    return out


def test_counters_add_up_each_jobs_gpu_time_energy_and_sm_activity():
    ledger = WasteLedger()
    scrape(ledger, sample(0.0))
    got = scrape(ledger, sample(10.0))
    assert got[own.JOB_GPU_SECONDS] == {"job 4242": 20.0, "python nb.py": 10.0}
    # Bob's GPU reads no energy: no sample, never a 0
    assert got[own.JOB_ENERGY] == {"job 4242": 2000.0}
    assert got[own.JOB_SM_ACTIVE] == {"job 4242": 12.0, "python nb.py": 0.0}
    assert got[own.JOB_SM_MEASURED] == {"job 4242": 20.0, "python nb.py": 10.0}


def test_seen_times_and_what_is_held_now():
    ledger = WasteLedger()
    scrape(ledger, sample(0.0))
    got = scrape(ledger, sample(10.0))
    assert got[own.JOB_FIRST_SEEN] == {"job 4242": 0.0, "python nb.py": 0.0}
    assert got[own.JOB_LAST_SEEN] == {"job 4242": 10.0, "python nb.py": 10.0}
    assert got[own.JOB_GPUS] == {"job 4242": 2.0, "python nb.py": 1.0}
    assert got[own.JOB_MEMORY] == {"job 4242": 2 * 8192 * MIB, "python nb.py": 4096 * MIB}


def test_an_ended_job_keeps_its_counters_and_seen_times_not_what_it_held():
    ledger = WasteLedger()
    scrape(ledger, sample(0.0))
    scrape(ledger, sample(10.0))
    got = scrape(ledger, sample(20.0, alice=False))
    assert got[own.JOB_GPU_SECONDS] == {"job 4242": 20.0, "python nb.py": 20.0}
    assert got[own.JOB_ENERGY] == {"job 4242": 2000.0}
    assert got[own.JOB_LAST_SEEN] == {"job 4242": 10.0, "python nb.py": 20.0}
    assert got[own.JOB_GPUS] == {"python nb.py": 1.0}
    assert got[own.JOB_MEMORY] == {"python nb.py": 4096 * MIB}

