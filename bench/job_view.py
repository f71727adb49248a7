"""The live cluster view's per-job aggregation at 1000 nodes × 8 GPUs, beside the refresh's
budget.

The GPUs run the jobs of ``bench/job_fleet.py``'s week at its middle (multi-node Slurm jobs of
2-16 nodes, single-node jobs on 1-8 GPUs, pods, inferred launches, GPUs free). Timed, in the
same run:

1. Over SSH, in this process: the nodes table's own work per refresh (each node's row from
   its summary), then a job's screen (``j`` on a node, or ``--slurm JOBID``) on top of it:
   ``job_view.report_from`` over every node's snapshot, and with ``--slurm`` the node
   statuses cut to the job's GPUs (``JobView.statuses``). Each refresh here finds every node
   with a new snapshot (the view builds a node's snapshot from its agent's document once, on
   first use): the worst case, every agent having sent since the last refresh.
2. Over Prometheus (a real one holding the 1000 nodes' series, the GPUs of Slurm jobs
   labelled ``hpc_job``): the nodes table's refresh, and ``--prometheus --slurm JOBID``'s
   refresh (which GPUs carry the job, then those nodes whole) with its report.

The budget: one refresh at 1000 nodes within 1 s (``bench/prometheus.py``'s goal), the screen
refreshing every min(1, max(0.25, interval / 2)) s (``ClusterApp.refresh_s``: 0.5 s at the
default 1 s interval).

Usage: python bench/job_view.py [--nodes 1000] [--repeats 5] [--skip-prometheus]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import job_fleet  # noqa: E402
from bench.prometheus import fleet_openmetrics  # noqa: E402
from gputop.backends.base import BackendOptions  # noqa: E402
from gputop.backends.sim.backend import SimBackend  # noqa: E402
from gputop.cluster import job_view  # noqa: E402
from gputop.cluster.aggregate import node_row  # noqa: E402
from gputop.cluster.node import NodeStatus  # noqa: E402
from gputop.cluster.prometheus import PrometheusCluster  # noqa: E402
from gputop.cluster.protocol import AgentDecoder, clean_document  # noqa: E402
from gputop.commands.cluster import JobView  # noqa: E402
from gputop.core import jsonout  # noqa: E402
from gputop.core.model import SCHEMA, Job, Snapshot, snapshot_to_json  # noqa: E402
from tests.support.prom_harness import Prometheus, find  # noqa: E402

GPUS = 8


def node_documents(nodes: int, held: dict[tuple[int, int], job_fleet.Job]) -> list[dict]:
    """Each node's agent document as the viewer holds it (checked), from the simulator's
    8-GPU training node: every GPU runs one process of the job the fleet gives it (its user,
    its Slurm job where it has one), or nothing."""
    backend = SimBackend(BackendOptions(scenario="training", sim_speed=1000))
    backend.open()
    base = backend.sample()
    backend.close()
    docs = []
    for n in range(nodes):
        devices = []
        for d in base.devices:
            job = held.get((n, d.index))
            if job is None:
                devices.append(replace(d, processes=()))
                continue
            p = d.processes[0]
            devices.append(replace(d, processes=(replace(
                p, pid=1000 + d.index, user=job.user, gpu_memory_mib=job.memory_mib,
                command=job.workload, container=None,
                job=None if job.hpc_job is None else Job("slurm", job.hpc_job, "0")),)))
        snap = replace(base, host=job_fleet.hostname(n), devices=tuple(devices))
        docs.append(clean_document(snapshot_to_json(snap)))
    return docs


class Fresh:
    """Node statuses as an SSH cluster holds them; after each ``arrive`` every node has a new
    document (its snapshot not built yet). What ``JobView`` reads of a cluster."""

    def __init__(self, docs: list[dict]) -> None:
        self.docs = docs
        self.version = 0
        self._statuses: list[NodeStatus] = []

    def arrive(self) -> None:
        self.version += 1
        self._statuses = [NodeStatus(doc["host"], "ok", "ssh", "", data=doc,
                                     received=time.monotonic(), seq=self.version)
                          for doc in self.docs]

    def statuses(self) -> list[NodeStatus]:
        return self._statuses


def timed(work: Callable[[], object], repeats: int,
          prepare: Callable[[], object] = lambda: None) -> tuple[float, float, object]:
    """The median and max seconds of ``repeats`` calls (each after an untimed ``prepare``),
    and the last call's result."""
    times = []
    out = None
    for _ in range(repeats):
        prepare()
        t0 = time.perf_counter()
        out = work()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), max(times), out


def biggest(held: dict[tuple[int, int], job_fleet.Job]) -> job_fleet.Job:
    """The Slurm job holding the most GPUs."""
    sizes: dict[job_fleet.Job, int] = {}
    for job in held.values():
        if job.hpc_job is not None:
            sizes[job] = sizes.get(job, 0) + 1
    return max(sizes, key=lambda j: (sizes[j], j.hpc_job or ""))


def ms(median: float, worst: float) -> str:
    return f"{median * 1e3:.0f} ms (max {worst * 1e3:.0f})"


def bench_ssh(docs: list[dict], job: str, repeats: int) -> None:
    fresh = Fresh(docs)

    def table() -> list:
        fresh.arrive()
        now = time.monotonic()
        return [node_row(s, now) for s in fresh.statuses()]

    def screen() -> job_view.JobReport:
        fresh.arrive()
        statuses = fresh.statuses()
        now = time.monotonic()
        [node_row(s, now) for s in statuses]
        return job_view.report_from(job, statuses)

    watched = JobView(fresh, [job])

    def slurm() -> job_view.JobReport:
        fresh.arrive()
        now = time.monotonic()
        [node_row(s, now) for s in watched.statuses()]
        return watched.report(job)

    lines = [jsonout.dumps(doc).encode() for doc in docs]
    hello = jsonout.dumps({"hello": "gputop", "schema": SCHEMA, "version": "bench",
                           "backend": "sim", "host": "n"}).encode()

    def decode() -> None:
        decoder = AgentDecoder()
        decoder.feed(hello)
        for line in lines:
            decoder.feed(line)

    print(f"  SSH transport, every node's new line decoded and checked (no view): "
          f"{ms(*timed(decode, repeats)[:2])}", flush=True)
    base = timed(table, repeats)
    print(f"  SSH, nodes table alone (every node's row from its summary): {ms(*base[:2])}",
          flush=True)
    m, w, r = timed(screen, repeats)
    assert isinstance(r, job_view.JobReport)
    print(f"  SSH, with job {job}'s screen (j on a node: its report over every node's "
          f"snapshot, built from the document): {ms(m, w)}: the job {ms(m - base[0], w)}; "
          f"{len(r.gpus)} GPUs on {len(r.nodes)} nodes, {len(r.stragglers)} stragglers",
          flush=True)
    m, w, r = timed(slurm, repeats)
    assert isinstance(r, job_view.JobReport)
    print(f"  SSH, --slurm {job} (every node cut to the job's GPUs, then its report): "
          f"{ms(m, w)}: the job {ms(m - base[0], w)}", flush=True)

    def built() -> None:
        fresh.arrive()
        [s.snapshot for s in fresh.statuses()]

    m, w, _ = timed(lambda: job_view.report_from(job, fresh.statuses()), repeats, built)
    print(f"  the job's report alone, every snapshot already built: {ms(m, w)}", flush=True)


def bench_prometheus(nodes: int, held: dict[tuple[int, int], job_fleet.Job], job: str,
                     repeats: int) -> None:
    hpc = {where: j.hpc_job for where, j in held.items() if j.hpc_job is not None}
    with tempfile.TemporaryDirectory(prefix="gputop-bench-jobview-") as tmp:
        work = Path(tmp)
        series = fleet_openmetrics(work / "fleet.om", nodes, GPUS, time.time(), hpc)
        subprocess.run([find("promtool"), "tsdb", "create-blocks-from", "openmetrics",
                        str(work / "fleet.om"), str(work / "data")], check=True,
                       capture_output=True)
        (work / "fleet.om").unlink()
        print(f"  Prometheus: {series} series, {len(hpc)} GPUs labelled with their Slurm job",
              flush=True)
        prom = Prometheus(work, [], interval="15s")
        try:
            cluster = PrometheusCluster(prom.url, '{job="gpus"}', interval=5.0, timeout=30.0)
            assert cluster.refresh(), cluster.problem  # untimed: the block read from disk

            def table() -> None:
                assert cluster.refresh(), cluster.problem
                now = time.monotonic()
                [node_row(s, now) for s in cluster.statuses()]

            base = timed(table, repeats)
            print(f"  Prometheus, nodes table refresh: {ms(*base[:2])}", flush=True)
            watched = PrometheusCluster(prom.url, '{job="gpus"}', interval=5.0, timeout=30.0,
                                        job=job)

            def slurm() -> job_view.JobReport:
                assert watched.refresh(), watched.problem
                now = time.monotonic()
                statuses = watched.statuses()
                [node_row(s, now) for s in statuses]
                snaps: dict[str, Snapshot | None] = {s.host: s.snapshot for s in statuses}
                return job_view.report(job, snaps)

            m, w, r = timed(slurm, repeats)
            assert isinstance(r, job_view.JobReport)
            print(f"  Prometheus, --slurm {job} refresh (its GPUs, their nodes whole) and its "
                  f"report: {ms(m, w)}; {len(r.gpus)} GPUs on {len(r.nodes)} nodes", flush=True)
        finally:
            prom.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--skip-prometheus", action="store_true")
    args = parser.parse_args()
    end = float(int(time.time()))
    start = end - 7 * 86400
    jobs = job_fleet.plan(args.nodes, start, end, args.seed)
    held = job_fleet.placement(jobs, (start + end) / 2)
    job = biggest(held)
    running = len(set(held.values()))
    print(f"{args.nodes} nodes × {GPUS} GPUs: {len(held)} GPUs busy with {running} jobs; "
          f"watched: Slurm job {job.hpc_job} ({len(job.nodes)} nodes × {job.gpus} GPUs)",
          flush=True)
    assert job.hpc_job is not None
    bench_ssh(node_documents(args.nodes, held), job.hpc_job, args.repeats)
    if not args.skip_prometheus:
        bench_prometheus(args.nodes, held, job.hpc_job, args.repeats)


if __name__ == "__main__":
    main()
