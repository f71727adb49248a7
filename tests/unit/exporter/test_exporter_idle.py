"""The idle-allocated counters (#30): one series per (job, user), never going backwards, so that
Prometheus can sum them by user or by hpc_job over any range without counting a second twice."""

from __future__ import annotations

from gputop.analysis.accounting import OWNER_RETENTION_S
from gputop.analysis.waste import WasteLedger
from gputop.core.model import Device, Job, Process, Snapshot
from gputop.exporter.own import IDLE_ENERGY, IDLE_SECONDS, Options
from gputop.exporter.server import Latest

ALICE = Process(pid=1, user="alice", gpu_memory_mib=8192, started=1.0, job=Job("slurm", "4242"))
BOB = Process(pid=2, user="bob", gpu_memory_mib=8192, started=1.0, command="python nb.py")


def sample(t: float, *procs: Process, util: float = 0.0) -> Snapshot:
    return Snapshot(host="n", time=t, backend="test", devices=(Device(
        index=0, utilization_gpu_pct=util, power_draw_w=100.0, processes=procs),))


def scrape(ledger: WasteLedger, snap: Snapshot) -> dict[tuple[str, str], float]:
    latest = Latest(Options(), "test", waste=ledger)
    latest.publish(ledger.annotate(snap))
    out = {}
    assert latest.body is not None
    for line in latest.body.decode().splitlines():
        if line.startswith((IDLE_SECONDS, IDLE_ENERGY)):
            name, value = line.rsplit(" ", 1)
            out[(name.split("{")[0], name.split("{")[1])] = float(value)
    return out


def test_counters_per_job_and_user_keep_a_job_that_ended():
    ledger = WasteLedger()
    scrape(ledger, sample(0.0, ALICE, BOB))
    first = scrape(ledger, sample(10.0, ALICE, BOB))
    alice = 'hostname="n",user="alice",hpc_job="4242",workload="job 4242",inferred="false"}'
    bob = 'hostname="n",user="bob",hpc_job="",workload="python nb.py",inferred="true"}'
    assert first[(IDLE_SECONDS, alice)] == 10.0 and first[(IDLE_SECONDS, bob)] == 10.0
    assert first[(IDLE_ENERGY, alice)] == 500.0  # half the GPU's 100 W by memory share
    # Alice's job ends; Bob's GPU gets busy: neither series goes back nor vanishes.
    later = scrape(ledger, sample(20.0, BOB, util=90.0))
    assert later[(IDLE_SECONDS, alice)] == 10.0 and later[(IDLE_SECONDS, bob)] == 10.0
    # A day later with nothing idle, the ended job's series is let go.
    gone = scrape(ledger, sample(20.0 + OWNER_RETENTION_S + 1, BOB, util=90.0))
    assert (IDLE_SECONDS, alice) not in gone
