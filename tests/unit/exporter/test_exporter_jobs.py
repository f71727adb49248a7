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
                own.JOB_FIRST_SEEN, own.JOB_LAST_SEEN, own.JOB_GPUS, own.JOB_MEMORY,
                own.JOB_GPUS_PEAK, own.JOB_MEMORY_PEAK)


def sample(t: float, alice: bool = True, alice_gpus: int = 2) -> Snapshot:
    """Alice's job on GPUs 0 and 1 (or the first ``alice_gpus`` of them) at 60 % and 100 W
    each; Bob's notebook idle on GPU 2, which reports no power nor energy."""
    mine = (ALICE,) if alice else ()
    return Snapshot(host="n", time=t, backend="test", devices=(
        *(Device(index=i, utilization_gpu_pct=60.0, power_draw_w=100.0,
                 processes=mine if i < alice_gpus else ()) for i in (0, 1)),
        Device(index=2, utilization_gpu_pct=0.0, processes=(BOB,))))


def scrape(ledger: WasteLedger, snap: Snapshot) -> dict[str, dict[str, float]]:
    """Each job family's samples, by the workload label, as the exporter's /metrics serves
    them (the account labels checked on the way); the node's under ""."""
    latest = Latest(own.Options(), "test", waste=ledger)
    latest.publish(ledger.annotate(snap))
    assert latest.body is not None
    out: dict[str, dict[str, float]] = {name: {} for name in (*JOB_FAMILIES, own.EXPORTER_START)}
    for family in text_string_to_metric_families(latest.body.decode()):
        for s in family.samples:
            if s.name == own.EXPORTER_START:
                assert s.labels == {"hostname": "n"}, s
                out[s.name][""] = s.value
            elif s.name in out:
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



def test_the_peaks_are_kept_from_the_jobs_first_sample_and_after_it_ends():
    """The most GPUs and memory held at once, served as long as the counters: a reader at
    steps finds a job's peak after it ended, as the held-now gauges cannot tell it."""
    ledger = WasteLedger()
    got = scrape(ledger, sample(0.0))
    assert got[own.JOB_GPUS_PEAK] == {"job 4242": 2.0, "python nb.py": 1.0}
    got = scrape(ledger, sample(10.0, alice_gpus=1))  # Alice gives a GPU back
    assert got[own.JOB_GPUS]["job 4242"] == 1.0
    assert got[own.JOB_GPUS_PEAK] == {"job 4242": 2.0, "python nb.py": 1.0}
    assert got[own.JOB_MEMORY_PEAK] == {"job 4242": 2 * 8192 * MIB, "python nb.py": 4096 * MIB}
    got = scrape(ledger, sample(20.0, alice=False))  # her job ended: its peaks stay
    assert got[own.JOB_GPUS_PEAK] == {"job 4242": 2.0, "python nb.py": 1.0}
    assert got[own.JOB_MEMORY_PEAK] == {"job 4242": 2 * 8192 * MIB, "python nb.py": 4096 * MIB}


def test_the_node_says_when_its_counters_began():
    """One series for the node: the ledger's first sample. A restart serves a newer one, which
    tells a reader that every counter of the node started over."""
    ledger = WasteLedger()
    assert scrape(ledger, sample(100.0))[own.EXPORTER_START] == {"": 100.0}
    assert scrape(ledger, sample(110.0))[own.EXPORTER_START] == {"": 100.0}
    assert scrape(WasteLedger(), sample(120.0))[own.EXPORTER_START] == {"": 120.0}
