"""The scale bench's fleet (bench/job_fleet.py): a job mix that looks like a cluster's week, and
OpenMetrics text that is what the exporter would have served and promtool can backfill."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from bench import job_fleet as fleet
from gputop.analysis.accounting import OWNER_RETENTION_S
from gputop.exporter import own

END = 1_790_000_000.0
START = END - 7 * 86400
NODES = 40


@pytest.fixture(scope="module")
def jobs() -> list[fleet.Job]:
    return fleet.plan(NODES, START, END, seed=7)


def test_the_mix_is_seeded(jobs):
    assert fleet.plan(NODES, START, END, seed=7) == jobs
    assert fleet.plan(NODES, START, END, seed=8) != jobs


def test_the_mix_has_what_a_cluster_runs(jobs):
    multi = [j for j in jobs if len(j.nodes) > 1]
    assert multi and all(j.hpc_job and j.gpus == 8 for j in multi)
    assert {j.gpus for j in jobs} >= {1, 2, 4, 8}
    assert any(j.workload.startswith("pod ") and j.hpc_job is None for j in jobs)
    inferred = [j for j in jobs if j.inferred]
    assert inferred and all(j.hpc_job is None for j in inferred)
    assert any(j.idle is not None for j in jobs) and any(j.idle is None for j in jobs)
    assert any(j.start < START for j in jobs)  # a week cut out of a running cluster
    per_gpu = fleet.truth(jobs, START, END)["jobs"] / (NODES * 8)
    assert 0.5 < per_gpu < 10


def test_each_account_is_one_series_and_a_slot_runs_one_job_at_a_time(jobs):
    seen: dict[tuple, list[fleet.Job]] = defaultdict(list)
    for j in jobs:
        for node in j.nodes:
            seen[(node, fleet.account_labels(j, node))].append(j)
    assert all(len(v) == 1 for v in seen.values())
    for j in jobs:
        assert j.start < j.end
        if j.idle is not None:
            assert j.start <= j.idle[0] < j.idle[1] <= j.end


def test_each_gpu_runs_one_job_at_a_time(jobs):
    at = START + 3 * 86400
    held = fleet.placement(jobs, at)
    running = [j for j in jobs if j.start <= at < j.end]
    assert len(held) == sum(len(j.nodes) * j.gpus for j in running)  # none left out
    assert {index for _, index in held} <= set(range(8))
    for j in running:
        for node in j.nodes:
            assert sum(1 for (n, _), other in held.items() if n == node and other == j) == j.gpus


def series(text: str) -> dict[str, list[tuple[float, int]]]:
    out: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name_labels, value, stamp = line.rsplit(" ", 2)
        out[name_labels].append((float(value), int(stamp)))
    return out


def test_the_text_is_what_the_exporter_served_and_promtool_backfills(jobs):
    times = fleet.steps(START, END, 3600)
    started = [j for j in jobs if j.start >= START]
    some = list(dict.fromkeys([j for j in started if j.idle is not None][:5]
                              + [j for j in started if len(j.nodes) > 1][:2]))
    text = "".join(fleet.openmetrics(some, times))
    assert text.endswith("# EOF\n")
    types = re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M)
    assert types == [(f.removesuffix("_total"), "counter" if f in fleet.COUNTERS else "gauge")
                     for f in fleet.FAMILIES]
    by_series = series(text)
    for key, points in by_series.items():
        stamps = [t for _, t in points]
        assert stamps == sorted(set(stamps)), key  # one family's series together, oldest first
        if key.split("{")[0].endswith("_total"):
            values = [v for v, _ in points]
            assert values == sorted(values), key  # counters never go down
    for j in some:
        labels = fleet.account_labels(j, j.nodes[-1])
        held = by_series[f"{own.JOB_GPUS}{{{labels}}}"]
        kept = by_series[f"{own.JOB_GPU_SECONDS}{{{labels}}}"]
        assert held and max(t for _, t in held) <= j.end  # gone when the job ends
        peak = by_series[f"{own.JOB_GPUS_PEAK}{{{labels}}}"]
        assert [t for _, t in peak] == [t for _, t in kept]  # the peaks kept as the counters
        assert {v for v, _ in peak} == {float(j.gpus)}
        assert max(t for _, t in kept) <= j.end + OWNER_RETENTION_S
        assert max(t for _, t in kept) > j.end or j.end + OWNER_RETENTION_S > END
        assert f'hostname="{fleet.hostname(j.nodes[-1])}"' in labels
        assert f'instance="{fleet.hostname(j.nodes[-1])}:' in labels
    # each node's exporter began counting before the week, at every scrape
    began = {k: v for k, v in by_series.items() if k.startswith(own.EXPORTER_START + "{")}
    assert len(began) == len({n for j in some for n in j.nodes})
    assert all(len(v) == len(times) and v[0][0] < START for v in began.values())


def test_the_counters_add_up_to_the_mix(jobs):
    times = fleet.steps(START, END, 600)
    inside = [j for j in jobs if START <= j.start and j.end + OWNER_RETENTION_S <= END]
    assert inside
    gpu_s = idle_s = 0.0
    for j in inside:
        last = max(t for t in fleet.served(j, own.JOB_GPU_SECONDS, times))
        gpu_s += len(j.nodes) * fleet.values(j, own.JOB_GPU_SECONDS, last)
        idle_s += len(j.nodes) * fleet.values(j, own.IDLE_SECONDS, last)
        busy = fleet.values(j, own.JOB_SM_ACTIVE, last)
        assert busy == pytest.approx((j.end - j.start - j.idle_s(j.end)) * j.gpus * j.sm_pct
                                     / 100)
    want = fleet.truth(inside, START, END)
    assert gpu_s == pytest.approx(want["gpu_s"])
    assert idle_s == pytest.approx(want["idle_gpu_s"])
    assert idle_s > 0


def test_the_copies_are_the_scrapes_at_their_hours_under_the_rules_names(jobs):
    times = fleet.steps(START, END, 600)
    copies = times[::6]
    some = [j for j in jobs if j.start >= START][:4]
    by_series = series("".join(fleet.openmetrics(some, times, copies)))
    for family in own.COPIED:
        raw = {k.removeprefix(family): v for k, v in by_series.items()
               if k.startswith(family + "{")}
        copied = {k.removeprefix(own.copy_of(family)): v for k, v in by_series.items()
                  if k.startswith(own.copy_of(family) + "{")}
        assert copied and copied.keys() <= raw.keys(), family
        for labels, points in copied.items():
            assert points == [p for p in raw[labels] if p[1] in copies], (family, labels)
