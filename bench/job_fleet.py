"""A week of a GPU fleet's jobs, as gputop exporters serve them and Prometheus scrapes them.

Pure: a seeded job mix (:func:`plan`) and the OpenMetrics text of the exporter's job families
over it (:func:`openmetrics`), what ``promtool tsdb create-blocks-from openmetrics`` turns into
the TSDB that ``bench/report_scale.py`` times ``gputop report`` against. No file, no clock.

The families and their labels are the exporter's (``gputop.exporter.own``; docs/waste.md): one
series per account (a job run by one user) per node, with the node's ``hostname`` and the
``instance`` and ``job`` labels a scrape adds. Counters (GPU seconds, energy, SM activity, idle
time and energy), the first/last-seen gauges and the peaks are served while the exporter
retains the account (``OWNER_RETENTION_S`` after it was last seen, flat once it ended); the
units held and the memory held only while the job runs, as the exporter serves them; and one
series per node, when its exporter began counting (a month before the week: no restart).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from gputop.analysis.accounting import OWNER_RETENTION_S
from gputop.core.units import MIB
from gputop.exporter import own

HOUR = 3600.0
SCRAPE_JOB = "gpus"
PORT = 9400

# The exporter's job families by their series' names (gputop.exporter.own).
COUNTERS = (own.JOB_GPU_SECONDS, own.JOB_ENERGY, own.JOB_SM_ACTIVE, own.JOB_SM_MEASURED,
            own.IDLE_SECONDS, own.IDLE_ENERGY)
# served as long as the counters
RETAINED_GAUGES = (own.JOB_FIRST_SEEN, own.JOB_LAST_SEEN, own.JOB_GPUS_PEAK, own.JOB_MEMORY_PEAK)
PRESENT_GAUGES = (own.JOB_GPUS, own.JOB_MEMORY)  # served while the job runs
ACCOUNT_FAMILIES = (*COUNTERS, *RETAINED_GAUGES, *PRESENT_GAUGES)
FAMILIES = (*ACCOUNT_FAMILIES, own.EXPORTER_START)  # and one series per node
STARTED_BEFORE_S = 30 * 86400.0  # how long before the week every exporter started

# Slot layouts of a node not in the multi-node pool: the GPU counts its jobs run on, each slot
# a queue of jobs one after another.
LAYOUTS = ((8,), (8,), (4, 4), (4, 4), (2, 2, 4), (1, 1, 2, 4), (2, 2, 2, 2))
MULTI_NODE_SHARE = 0.2  # of the nodes, in groups of 2-16 that run multi-node Slurm jobs
GROUP_SIZES = (2, 4, 8, 16)


@dataclass(frozen=True)
class Job:
    """One job: where it ran (``gpus`` on each of ``nodes``), when, and what it did."""

    workload: str  # the exporter's job label: "job 4242", "pod ns/x", "python train.py"
    hpc_job: str | None  # the Slurm job id; None for a pod or an inferred launch
    user: str
    inferred: bool
    nodes: tuple[int, ...]
    gpus: int  # on each node
    start: float
    end: float
    idle: tuple[float, float] | None  # a stretch held idle: memory held, SM activity 0
    sm_pct: float  # SM activity while busy
    busy_w: float  # power per GPU while busy
    idle_w: float  # power per GPU while held idle
    memory_mib: float  # held per GPU

    def idle_s(self, until: float) -> float:
        """Seconds of the job held idle from its start to ``until``."""
        if self.idle is None:
            return 0.0
        return max(0.0, min(until, self.end, self.idle[1]) - self.idle[0])


def _idle_stretch(rng: random.Random, start: float, end: float,
                  chance: float) -> tuple[float, float] | None:
    """Where a job is held idle, if it is: its tail (a crashed peer, a hung rank held to its
    walltime) or a stretch in the middle (a notebook left open over the night)."""
    if rng.random() >= chance:
        return None
    length = end - start
    if rng.random() < 0.5:
        return start + length * rng.uniform(0.3, 0.9), end
    a = start + length * rng.uniform(0.1, 0.6)
    return a, min(end, a + length * rng.uniform(0.1, 0.3))


def plan(nodes: int, start: float, end: float, seed: int = 30) -> list[Job]:
    """The jobs of ``nodes`` nodes of 8 GPUs between ``start`` and ``end`` (seconds), seeded.

    A fifth of the nodes run multi-node Slurm jobs in groups of 2-16 (6-48 h each, all 8 GPUs
    of every node); the others run queues of 2-72 h jobs on slots of 1-8 GPUs: mostly Slurm
    jobs, some pods, some launches gputop infers (a notebook, held idle more often than not).
    Queues start before ``start`` (a week cut out of a running cluster) and leave gaps of up to
    a few hours unallocated. Users are skewed: a few run most of the jobs."""
    rng = random.Random(seed)
    users = [f"u{k:03d}" for k in range(max(8, nodes // 8))]
    weights = [1.0 / (k + 1) for k in range(len(users))]
    next_id = [4_000_000]
    jobs: list[Job] = []

    def user() -> str:
        return rng.choices(users, weights)[0]

    def slurm_id() -> str:
        next_id[0] += rng.randint(1, 40)
        return str(next_id[0])

    def queue(where: tuple[int, ...], gpus: int, hours: tuple[float, float],
              multi: bool) -> None:
        t = start - rng.uniform(0, hours[1] * HOUR)
        while t < end:
            t_end = t + rng.uniform(*hours) * HOUR
            kind = "slurm" if multi else rng.choices(("slurm", "pod", "notebook", "serve"),
                                                     (80, 8, 7, 5))[0]
            who = user()
            if kind == "slurm":
                job_id: str | None = slurm_id()
                workload, inferred, idle_chance = f"job {job_id}", False, 0.15
            elif kind == "pod":
                job_id, inferred, idle_chance = None, False, 0.1
                workload = f"pod research/{who}-trainer-{len(jobs)}"
            else:  # a launch gputop infers: named by its command line, here one of its own
                job_id, inferred = None, True
                workload, idle_chance = ((f"jupyter-lab --port={len(jobs)}", 0.8)
                                         if kind == "notebook"
                                         else (f"python serve.py --port={len(jobs)}", 0.3))
            jobs.append(Job(
                workload, job_id, who, inferred, where, gpus, t, t_end,
                _idle_stretch(rng, t, t_end, idle_chance), sm_pct=rng.uniform(35, 95),
                busy_w=rng.uniform(300, 650), idle_w=rng.uniform(60, 90),
                memory_mib=rng.uniform(8_000, 78_000)))
            t = t_end + rng.choice((0.0, 0.0, rng.uniform(0, 4 * HOUR)))

    pool = int(nodes * MULTI_NODE_SHARE)
    n = 0
    while n < pool:
        size = min(rng.choice(GROUP_SIZES), pool - n)
        queue(tuple(range(n, n + size)), 8, (6, 48), multi=True)
        n += size
    for node in range(pool, nodes):
        for width in rng.choice(LAYOUTS):
            queue((node,), width, (2, 72), multi=False)
    return [j for j in jobs if j.end > start - OWNER_RETENTION_S]


def placement(jobs: Sequence[Job], at: float, gpus: int = 8) -> dict[tuple[int, int], Job]:
    """The job each GPU (node, index) runs at ``at``: a node's running jobs on its GPUs in
    turn, in the order planned (its slots never hold more than its GPUs)."""
    out: dict[tuple[int, int], Job] = {}
    taken: dict[int, int] = {}
    for job in jobs:
        if not job.start <= at < job.end:
            continue
        for node in job.nodes:
            first = taken.get(node, 0)
            if first + job.gpus > gpus:
                raise ValueError(f"node {node} holds more than {gpus} GPUs' jobs at {at}")
            for index in range(first, first + job.gpus):
                out[(node, index)] = job
            taken[node] = first + job.gpus
    return out


def hostname(node: int) -> str:
    return f"gpu{node:04d}"


def steps(start: float, end: float, step: float) -> list[int]:
    """The scrape times from ``start`` to ``end``, ``step`` apart (whole seconds)."""
    count = int((end - start) // step) + 1
    return [int(start + k * step) for k in range(count)]


def node_labels(node: int) -> str:
    """A node's labels, as a scrape of its exporter gives them."""
    host = hostname(node)
    return f'instance="{host}:{PORT}",job="{SCRAPE_JOB}",hostname="{host}"'


def account_labels(job: Job, node: int) -> str:
    """One account's labels on one node, as a scrape of the exporter gives them."""
    account = {"user": job.user, "hpc_job": job.hpc_job or "", "workload": job.workload,
               "inferred": "true" if job.inferred else "false"}
    return ",".join([node_labels(node),
                     *(f'{name}="{account[name]}"' for name in own.ACCOUNT_LABELS)])


def values(job: Job, family: str, t: float) -> float:
    """What the exporter serves for ``job``'s account on one node at ``t`` (seconds): every
    figure is the node's alone (its ``job.gpus`` GPUs)."""
    held = max(0.0, min(t, job.end) - job.start)
    idle = job.idle_s(t)
    busy = held - idle
    n = job.gpus
    if family in (own.JOB_GPU_SECONDS, own.JOB_SM_MEASURED):
        return held * n
    if family == own.JOB_SM_ACTIVE:
        return busy * n * job.sm_pct / 100.0
    if family == own.JOB_ENERGY:
        return n * (busy * job.busy_w + idle * job.idle_w)
    if family == own.IDLE_SECONDS:
        return idle * n
    if family == own.IDLE_ENERGY:
        return idle * n * job.idle_w
    if family == own.JOB_FIRST_SEEN:
        return job.start
    if family == own.JOB_LAST_SEEN:
        return min(t, job.end)
    if family in (own.JOB_GPUS, own.JOB_GPUS_PEAK):
        return float(n)
    if family in (own.JOB_MEMORY, own.JOB_MEMORY_PEAK):
        return n * job.memory_mib * MIB
    raise ValueError(f"not a job family: {family}")


def served(job: Job, family: str, times: Sequence[int]) -> Sequence[int]:
    """The scrape times at which the exporter serves ``family`` for ``job``'s accounts: from
    its start, to its end for what is held now, else while the account is retained."""
    until = job.end if family in PRESENT_GAUGES else job.end + OWNER_RETENTION_S
    return [t for t in times if job.start <= t <= until]


def openmetrics(jobs: Sequence[Job], times: Sequence[int],
                copies: Sequence[int] = ()) -> Iterator[str]:
    """The OpenMetrics text of every job family at ``times`` and of each node's exporter start,
    family by family, each series' samples oldest first (what promtool's backfill asks for),
    in chunks of one series; with ``copies`` (scrape times an hour apart), the copies the
    recording rules of `gputop exporter --recording-rules` keep of the families they copy (a
    rule evaluated at a scrape time reads that scrape's value), under their own names."""
    for family in ACCOUNT_FAMILIES:
        kind = "counter" if family in COUNTERS else "gauge"
        yield from _family(jobs, family, family, kind, times)
    yield from _starts(jobs, own.EXPORTER_START, times[0], times)
    if copies:
        for family in own.COPIED:
            if family != own.EXPORTER_START:
                yield from _family(jobs, family, own.copy_of(family), "gauge", copies)
        yield from _starts(jobs, own.copy_of(own.EXPORTER_START), times[0], copies)
    yield "# EOF\n"


def _family(jobs: Sequence[Job], family: str, name: str, kind: str,
            times: Sequence[int]) -> Iterator[str]:
    """``family``'s series at ``times`` under ``name`` (its own, or its copy's)."""
    # OpenMetrics declares a counter by its series' name less ``_total``
    yield f"# TYPE {name.removesuffix('_total') if kind == 'counter' else name} {kind}\n"
    for job in jobs:
        at = served(job, family, times)
        if not at:
            continue
        for node in job.nodes:
            head = f"{name}{{{account_labels(job, node)}}} "
            yield "".join([f"{head}{values(job, family, t):.3f} {t}\n" for t in at])


def _starts(jobs: Sequence[Job], name: str, first: int, times: Sequence[int]) -> Iterator[str]:
    """Each node's exporter start (a month before ``first``) at ``times``, under ``name``."""
    yield f"# TYPE {name} gauge\n"
    began = first - STARTED_BEFORE_S
    for node in sorted({node for job in jobs for node in job.nodes}):
        head = f"{name}{{{node_labels(node)}}} {began:.3f}"
        yield "".join([f"{head} {t}\n" for t in times])


def truth(jobs: Sequence[Job], start: float, end: float) -> dict[str, float]:
    """The fleet's totals over ``start``..``end`` (seconds) that a report over that range should
    find: GPU seconds and idle GPU seconds held in it, and the jobs that ran in it."""
    gpu_s = idle_s = 0.0
    running = 0
    for j in jobs:
        if j.end <= start or j.start >= end:
            continue
        running += 1
        nodes = len(j.nodes) * j.gpus
        gpu_s += nodes * (min(end, j.end) - max(start, j.start))
        idle_s += nodes * (j.idle_s(end) - j.idle_s(max(start, j.start)))
    return {"jobs": running, "gpu_s": gpu_s, "idle_gpu_s": idle_s}
