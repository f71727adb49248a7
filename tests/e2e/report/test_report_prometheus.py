"""The report's Prometheus source against the agent's recording and the simulator's ground truth
(#30, Done when 2): a real Prometheus scrapes a real `gputop exporter` on the `idle-rank`
scenario while a real `gputop agent` on the same scenario records NDJSON; both are started
together. Over one wall-clock range, `fetch_records` (instant queries reading the exporter's
counters at the range's edges) and the recording folded through the idle ledger give the same
job figures, each exact for the samples it read, and both match what the scenario says: job
4242 holds GPUs 0-3, rank 3 idle.

Two simulator processes share no clock. Each counts virtual time from its own start (its epoch
is its own time.time() then) and, with the same seed, reads the same values at the same virtual
instants, on a grid of its interval; their wall-clock times differ by the offset between their
starts (measured here: a few hundred ms). GPU and idle seconds do not depend on it (the
scenario holds steady), nor does the idle rank's energy (a constant 101.5 W); the busy ranks'
energy does, a little, by the phase of their step pattern. So both are compared over one
wall-clock range, and each is held exact against the samples it read:

- a figure over [start, end] counts the intervals whose newer sample lies in (start, end]; the
  recording's edges are its newest samples at or before start and end;
- Prometheus's edges are the exporter's samples its last scrape before start and before end
  read: each lags its edge by up to a scrape interval plus an exporter interval. Which samples
  they were is known (`gputop_snapshot_timestamp_seconds` rides in the same scrape), so the
  fetched figures are checked exactly against the exporter's samples they cover;
- the two then differ by at most SCRAPE_S + INTERVAL_S of each GPU's time per GPU held (both
  grids step by INTERVAL_S, which divides SCRAPE_S), and of its energy at most that time at
  the part's TDP.

The same range asked with `increase()` instead, which extrapolates to the edges, is measured
beside it (printed with -s)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from gputop.analysis.waste import WasteLedger
from gputop.backends.sim.scenario import load
from gputop.cluster.prometheus import http_query
from gputop.core.model import snapshot_from_json
from gputop.exporter import own
from gputop.exporter.recording_rules import recording_rules
from gputop.report.prometheus import GROUP, copies_query, fetch_records
from tests.support.paths import ROOT
from tests.support.prom_harness import Prometheus, start_exporter, stop, wait_for
from tests.support.ssh_harness import free_port

INTERVAL_S = 0.25  # the exporter's and the agent's sampling interval
SCRAPE_S = 1.0  # Prometheus's (the harness's "1s")
RANGE_S = 4.4  # a multiple of neither interval: the edges fall at any phase
SCENARIO = load("idle-rank")
JOB = [j for j in SCENARIO.jobs if not j.idle]
IDLE = [j for j in SCENARIO.jobs if j.idle]
HELD = sorted({g for j in SCENARIO.jobs for g in j.gpus})  # GPUs 0-3
IDLE_GPUS = sorted({g for j in IDLE for g in j.gpus})  # GPU 3
PART = SCENARIO.part
# The simulator's power model for a GPU a process holds and runs nothing on: the part's idle
# draw plus 5 % of its dynamic range for the held context (docs/simulator.md). Its energy
# counter integrates that, so the idle rank's energy is this times the time, exactly.
IDLE_HELD_W = PART.idle_w + 0.05 * (PART.tdp_w - PART.idle_w)


def fold(lines: list[dict], start: float, end: float) -> dict:
    """The recording's one job over (start, end]: its samples from the newest at or before
    ``start`` to the newest at or before ``end``, through the idle ledger."""
    at_start = max(d["time"] for d in lines if d["time"] <= start)
    ledger = WasteLedger()
    for doc in lines:
        if at_start <= doc["time"] <= end:
            ledger.add(snapshot_from_json(doc))
    [record] = ledger.accounts.records()
    record["edges"] = (at_start, max(d["time"] for d in lines if d["time"] <= end))
    return record


def instant(prom: Prometheus, promql: str, at: float) -> float:
    [series] = http_query(prom.url, promql, 10.0, at=at)
    return series["value"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Agent and exporter started together, Prometheus scraping the exporter, a range chosen
    once Prometheus holds the job's counters, and the recording up to past its end."""
    work = tmp_path_factory.mktemp("report-prom")
    sim = ("--backend", "sim", "--scenario", "idle-rank", "--interval", str(INTERVAL_S))
    recording = work / "agent.ndjson"
    with open(recording, "wb") as out:
        agent = subprocess.Popen([sys.executable, "-m", "gputop", "agent", *sim,
                                  "--ignore-stdin"], cwd=ROOT, stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=subprocess.PIPE)
    exporter = prom = None
    port = free_port()
    # Prometheus starts meanwhile: its scrapes fail until the exporter answers
    pool = ThreadPoolExecutor(1)
    # with the report's recording rules, copying each second rather than each hour
    rules = work / "rules.yml"
    rules.write_text(recording_rules(interval_s=1))
    starting = pool.submit(Prometheus, work, [f"127.0.0.1:{port}"], interval=f"{SCRAPE_S:g}s",
                           rule_files=(rules,))
    try:
        exporter = start_exporter(*sim, port=port)
        prom = starting.result()
        wait_for(lambda: prom.query("gputop_job_gpu_seconds_total"), 20.0, "the first scrape")
        start = time.time() + 0.3  # any phase against the scrapes and the samples
        end = start + RANGE_S
        time.sleep(max(0.0, end + 0.5 - time.time()))
    finally:
        stop(agent)
        if exporter is not None:
            stop(exporter.proc)
        if prom is None and starting.exception() is None:
            starting.result().stop()
        pool.shutdown()
    try:
        lines = [json.loads(line) for line in recording.read_text().splitlines()[1:]]
        assert lines and lines[-1]["time"] > end, agent.stderr.read() if agent.stderr else ""
        yield prom, lines, start, end, recording
    finally:
        prom.stop()


def test_prometheus_and_the_recording_agree_and_match_the_scenario(lab, capsys):
    prom, lines, start, end, _ = lab
    [got] = fetch_records(prom.url, start, end, selector='{job="gpus"}', timeout=10.0)
    want = fold(lines, start, end)
    # read from the recording rules' copies between the edges, as Prometheus kept them
    assert instant(prom, copies_query(start, end, '{job="gpus"}'), end) == 1

    # who: the scenario's job, as both name it; what it holds: the scenario's memory
    assert (got["job"], got["hpc_job"], got["user"], got["inferred"]) == \
        ("job 4242", JOB[0].slurm_job, JOB[0].user, False) == \
        (want["job"], want["hpc_job"], want["user"], want["inferred"])
    assert got["nodes"] == [lines[0]["host"]] and got["gpu_count"] == len(HELD)
    held_mib = sum(j.memory_mib * len(j.gpus) for j in SCENARIO.jobs)
    assert got["peak_memory_mib"] == want["peak_memory_mib"] == held_mib

    # Prometheus read the exporter's counters at two of its samples: which, it says itself
    r = f"{round(RANGE_S * 1000)}ms"
    first = instant(prom, f"gputop_snapshot_timestamp_seconds offset {r}", end)
    last = instant(prom, f"last_over_time(gputop_snapshot_timestamp_seconds[{r}])", end)
    lag = SCRAPE_S + INTERVAL_S
    assert start - lag < first <= start and end - lag < last <= end
    seen = last - first
    # exact for those samples: every GPU held throughout, the idle rank idle throughout
    assert got["gpu_s"] == pytest.approx(len(HELD) * seen, abs=1e-3)
    assert got["idle_gpu_s"] == pytest.approx(len(IDLE_GPUS) * seen, abs=1e-3)
    assert got["idle_energy_j"] == pytest.approx(IDLE_HELD_W * len(IDLE_GPUS) * seen, rel=1e-6)
    # the busy ranks draw between the held idle power and the part's TDP
    busy = len(HELD) - len(IDLE_GPUS)
    assert IDLE_HELD_W * len(HELD) * seen < got["energy_j"] < \
        (IDLE_HELD_W * len(IDLE_GPUS) + PART.tdp_w * busy) * seen

    # the recording, exact for its samples in turn
    span = want["edges"][1] - want["edges"][0]
    assert want["gpu_s"] == pytest.approx(len(HELD) * span, abs=1e-3)
    assert want["idle_gpu_s"] == pytest.approx(len(IDLE_GPUS) * span, abs=1e-3)
    assert want["idle_energy_j"] == pytest.approx(IDLE_HELD_W * len(IDLE_GPUS) * span, rel=1e-6)

    # and the two within one scrape and one sample interval per GPU held
    assert abs(got["gpu_s"] - want["gpu_s"]) <= lag * len(HELD) + 1e-6
    assert abs(got["idle_gpu_s"] - want["idle_gpu_s"]) <= lag * len(IDLE_GPUS) + 1e-6
    assert abs(got["energy_j"] - want["energy_j"]) <= lag * len(HELD) * PART.tdp_w
    assert abs(got["idle_energy_j"] - want["idle_energy_j"]) <= \
        lag * len(IDLE_GPUS) * IDLE_HELD_W + 1e-3
    # a mean over the busy ranks' steps (about 85 % while they compute) and the idle one's 0,
    # over ranges a few samples apart
    assert got["sm_active_pct"] == pytest.approx(want["sm_active_pct"], abs=2.0)

    # increase() over the same range, measured beside it (-s shows it)
    extrapolated = {key: instant(prom, f"sum by ({GROUP}) (increase({family}[{r}]))", end)
                    for key, family in (("gpu_s", own.JOB_GPU_SECONDS),
                                        ("idle_gpu_s", own.IDLE_SECONDS),
                                        ("energy_j", own.JOB_ENERGY))}
    opened = instant(prom, f"min_over_time({own.JOB_FIRST_SEEN}[1h])", end)
    with capsys.disabled():
        print(f"\nthe agent's first sample {lines[0]['time'] - opened:+.3f} s from the exporter's; "
              f"Prometheus's edges lag start by {start - first:.3f} s, end by {end - last:.3f} s")
        for key in ("gpu_s", "idle_gpu_s", "energy_j", "sm_active_pct"):
            print(f"{key}: recording {want[key]:.3f}, edges {got[key]:.3f} "
                  f"({got[key] - want[key]:+.3f})" + (
                      f", increase() {extrapolated[key]:.3f} "
                      f"({extrapolated[key] - want[key]:+.3f})" if key in extrapolated else ""))


def test_a_range_from_before_the_exporter_counts_it_from_its_first_sample(lab, capsys):
    """A job new since the range's start (its series absent there) counts from 0, where
    increase() would take the first value Prometheus scraped as its baseline. The exporter
    started within the range, so its node is read again from every sample (the second
    round, `exact_queries`)."""
    prom, lines, start, end, _ = lab
    early = lines[0]["time"] - 30.0
    asked: list[str] = []

    def ask(base: str, promql: str, timeout: float, at: float) -> list[dict]:
        asked.append(promql)
        return http_query(base, promql, timeout, at)

    [got] = fetch_records(prom.url, early, end, ask=ask)
    assert any("resets(" in q for q in asked)  # the second round
    r = f"{round((end - early) * 1000)}ms"
    opened = instant(prom, f"min_over_time({own.JOB_FIRST_SEEN}[{r}])", end)
    last = instant(prom, f"last_over_time(gputop_snapshot_timestamp_seconds[{r}])", end)
    assert got["first_seen"] == pytest.approx(opened)
    assert got["gpu_s"] == pytest.approx(len(HELD) * (last - opened), abs=1e-3)
    assert got["idle_gpu_s"] == pytest.approx(len(IDLE_GPUS) * (last - opened), abs=1e-3)
    extrapolated = instant(prom, f"sum by ({GROUP}) (increase({own.JOB_GPU_SECONDS}[{r}]))", end)
    with capsys.disabled():
        print(f"\nnew job: the exporter counted {len(HELD) * (last - opened):.3f} GPU s, edges "
              f"{got['gpu_s']:.3f}, increase() {extrapolated:.3f}")


def test_gputop_report_gives_the_same_job_figures_from_both_sources(lab):
    """Done when 2, as a person runs it: `gputop report` over the recording and over the
    Prometheus range, the same job, its figures within one scrape and one sample interval
    per GPU held (the module's docstring) of each other."""
    prom, _, start, end, recording = lab

    def report(*source: str) -> dict:
        out = subprocess.run([sys.executable, "-m", "gputop", "report", *source, "--since",
                              f"{start:.3f}", "--until", f"{end:.3f}", "--format", "json"],
                             cwd=ROOT, capture_output=True, text=True, timeout=30, check=True)
        [job] = json.loads(out.stdout)["jobs"]
        return job

    recorded, scraped = report(str(recording)), report("--prometheus", prom.url)
    lag_h = (SCRAPE_S + INTERVAL_S) / 3600.0
    assert recorded["job"] == scraped["job"] == "job 4242"
    assert recorded["gpus"] == scraped["gpus"] == len(HELD)
    assert recorded["nodes"] == scraped["nodes"] == 1
    assert abs(recorded["gpu_h"] - scraped["gpu_h"]) <= lag_h * len(HELD) + 1e-9
    assert abs(recorded["idle_gpu_h"] - scraped["idle_gpu_h"]) <= lag_h * len(IDLE_GPUS) + 1e-9
    assert abs(recorded["kwh"] - scraped["kwh"]) <= lag_h * len(HELD) * PART.tdp_w / 1000.0
    assert recorded["idle_pct"] == pytest.approx(scraped["idle_pct"], abs=5.0)
