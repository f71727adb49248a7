"""`gputop report` over a week of a 1000-node fleet in a real Prometheus.

For each run asked (NODES x STEP; default 1000 nodes at a 10 and a 20 minute step, and 25
nodes at a real 15 s scrape): a seeded job mix of NODES nodes × 8 GPUs over D days
(``bench/job_fleet.py``: multi-node Slurm jobs, single-node jobs on 1-8 GPUs, pods, inferred
launches, stretches held idle), written as the OpenMetrics text of the exporter's job families
and, beside them, the hourly copies the recording rules of ``gputop exporter
--recording-rules`` keep (a rule evaluated at a scrape reads that scrape's value), turned into
TSDB blocks by ``promtool tsdb create-blocks-from openmetrics`` in a temporary folder, and
served by a real ``prometheus`` on 127.0.0.1 (stopped by its PID; the folder removed), its
lookback at least twice the step so that an instant sees every series, once its compaction of
the backfilled blocks has settled. Then the report's Prometheus source, ``fetch_records`` over
the whole range, is timed twice: as it reads the copies, and as it reads a Prometheus without
them (the raw series at steps). Each: the first call (the blocks in the page cache) and the
median of the next ones, with the records it returns, the queries it sent and the bytes
Prometheus answered (from Prometheus's own counters), Prometheus's CPU, and the fleet's
GPU-hours and idle GPU-hours in the records beside the job mix's own. Beside it, in the same
run (``breakdown``): every sample read once (``floor_queries``), the report's queries reading
every sample (``exact_queries``) for every node and, as its second round, for a hundredth of
them, and each of its first round's queries over the copies alone.

The fleet's exporters never restart, so the report asks one round. A step coarser than a real
15 s scrape holds fewer samples: the 25-node run at 15 s holds as many as 1000 nodes at 10
minutes, 40 times denser, and shows whether the cost is the samples' or the series'.

Usage: python bench/report_scale.py [--runs 1000x600 1000x1200 25x15] [--days 7] [--repeats 3]
[--block-hours H] [--no-breakdown] (about 15 minutes; 1000x600 writes 5.5 GiB of text and
promtool maps it whole: 7 GB RSS; --block-hours 4 writes and backfills four hours at a time,
as 1000x15 needs: 35 GiB of text a day)
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from bench import job_fleet  # noqa: E402
from gputop.cluster.prometheus import PARALLEL_QUERIES, http_query  # noqa: E402
from gputop.exporter import own  # noqa: E402
from gputop.report.prometheus import (  # noqa: E402
    GROUP,
    RECHECK,
    copies_query,
    exact_queries,
    exact_selectors,
    fetch_records,
    recheck_query,
    start_queries,
)
from gputop.report.prometheus import queries as report_queries  # noqa: E402
from tests.support.prom_harness import Prometheus, find, get  # noqa: E402

Fetch = Callable[..., list[dict[str, Any]]]  # (url, start, end[, ask]) -> records


def build_tsdb(work: Path, jobs: list[job_fleet.Job], times: list[int],
               block_s: float | None = None, copies: list[int] | None = None) -> dict[str, float]:
    """Write the fleet's OpenMetrics text and promtool's blocks from it under ``work``; return
    the figures of the build. ``block_s``: the time each block holds (its text written, turned
    into a block and removed before the next: promtool maps its whole input), else one block
    for the whole range (promtool reads its whole input once per block it writes). ``copies``:
    the times of the recording rules' hourly copies, written beside the series."""
    span = block_s or (times[-1] - times[0] + 1)
    chunks = [[t for t in times if times[0] + k * span <= t < times[0] + (k + 1) * span]
              for k in range(int((times[-1] - times[0]) // span) + 1)]
    text = work / "fleet.om"
    samples = size = 0
    generated = written = 0.0
    for chunk in chunks:
        t0 = time.perf_counter()
        with text.open("w") as out:
            kept = [t for t in copies or () if chunk[0] <= t <= chunk[-1]]
            for piece in job_fleet.openmetrics(jobs, chunk, kept):
                out.write(piece)
                size += len(piece)
                samples += piece.count("\n")
        generated += time.perf_counter() - t0
        # the TYPE lines and the EOF
        samples -= len(job_fleet.FAMILIES) + (len(own.COPIED) if kept else 0) + 1
        t0 = time.perf_counter()
        subprocess.run([find("promtool"), "tsdb", "create-blocks-from", "openmetrics",
                        f"--max-block-duration={round(span / 3600) + 1}h", str(text),
                        str(work / "data")], check=True, capture_output=True)
        written += time.perf_counter() - t0
        text.unlink()
    files = [f for f in (work / "data").rglob("*") if f.is_file()]
    return {"samples": samples, "text_bytes": size, "generated_s": generated,
            "promtool_s": written, "block_bytes": sum(f.stat().st_size for f in files),
            "blocks": sum(1 for f in files if f.name == "meta.json")}


_SERVED = re.compile(r'^prometheus_http_(response_size_bytes_sum|requests_total)\{'
                     r'(?:code="200",)?handler="(/api/v1/query(?:_range)?)"\S*\} (\S+)$', re.M)


def served(url: str) -> dict[tuple[str, str], float]:
    """Prometheus's own counters of the queries it answered and the bytes of its answers, by
    (counter, handler)."""
    status, body = get(f"{url}/metrics", timeout=10.0)
    assert status == 200, body[:200]
    out: dict[tuple[str, str], float] = {}
    for counter, handler, value in _SERVED.findall(body.decode()):
        out[(counter, handler)] = out.get((counter, handler), 0.0) + float(value)
    return out


def loaded(url: str) -> float:
    """The blocks Prometheus has loaded (its compaction merges backfilled ones as it goes)."""
    status, body = get(f"{url}/metrics", timeout=10.0)
    assert status == 200, body[:200]
    found = re.search(r"^prometheus_tsdb_blocks_loaded (\S+)$", body.decode(), re.M)
    return float(found.group(1)) if found else float("nan")


def settle(url: str, first_s: float = 75.0, still_s: float = 15.0) -> float:
    """Wait for Prometheus to merge the backfilled blocks, as a server that has run a while
    holds them (its first compaction comes a minute after it starts): until ``first_s`` has
    passed and the blocks loaded have not changed for ``still_s``; return how many."""
    began = time.monotonic()
    blocks, since = loaded(url), time.monotonic()
    while time.monotonic() - began < first_s or time.monotonic() - since < still_s:
        time.sleep(5.0)
        now = loaded(url)
        if now != blocks:
            blocks, since = now, time.monotonic()
    return blocks


def time_report(fetch: Fetch, prom: Prometheus, start: float, end: float,
                repeats: int) -> dict[str, Any]:
    """Time ``fetch`` over start..end: the first call, then ``repeats`` more."""
    server = psutil.Process(prom.proc.pid)
    before = served(prom.url)
    cpu0 = sum(server.cpu_times()[:2])
    t0 = time.perf_counter()
    records = fetch(prom.url, start, end)
    first = time.perf_counter() - t0
    cpu = sum(server.cpu_times()[:2]) - cpu0
    after = served(prom.url)

    def delta(counter: str, handler: str) -> float:
        key = (counter, handler)
        return after.get(key, 0.0) - before.get(key, 0.0)

    again = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fetch(prom.url, start, end)
        again.append(time.perf_counter() - t0)
    return {
        "first_s": first, "median_s": statistics.median(again) if again else first,
        "max_s": max(again) if again else first, "records": records,
        "queries": delta("requests_total", "/api/v1/query"),
        "range_queries": delta("requests_total", "/api/v1/query_range"),
        "answer_bytes": delta("response_size_bytes_sum", "/api/v1/query"),
        "server_cpu_s": cpu, "server_rss": server.memory_info().rss,
    }


def floor_queries(start: float, end: float) -> dict[str, str]:
    """Every sample of the range read once: each family by one range function (a counter's
    ``increase()``, a gauge's ``min_over_time`` or ``max_over_time``), summed per node and
    account as ``fetch_records``'s queries are. What a report reading every sample costs at
    least."""
    r = f"[{round(end - start)}s]"
    out = {f: f"sum by ({GROUP}) (increase({f}{r}))" for f in job_fleet.COUNTERS}
    out[own.JOB_FIRST_SEEN] = f"min by ({GROUP}) (min_over_time({own.JOB_FIRST_SEEN}{r}))"
    for family in (own.JOB_LAST_SEEN, own.JOB_MEMORY_PEAK, own.JOB_GPUS_PEAK):
        out[family] = f"max by ({GROUP}) (max_over_time({family}{r}))"
    return out


def ask_all(url: str, promql: list[str], at: float) -> float:
    """Every query answered, ``PARALLEL_QUERIES`` at a time, as ``fetch_records`` sends them;
    the seconds it took."""
    t0 = time.perf_counter()
    with ThreadPoolExecutor(PARALLEL_QUERIES) as pool:
        list(pool.map(lambda q: http_query(url, q, 600.0, at), promql))
    return time.perf_counter() - t0


def breakdown(prom: Prometheus, start: float, end: float, nodes: int,
              repeats: int) -> dict[str, Any]:
    """Beside the report, in the same run: the floor (``floor_queries``) timed as
    ``time_report`` times the report; the report's queries reading every sample for every node
    (``exact_queries``: what the report asked before it read at steps); its second round for a
    hundredth of the nodes, as a week in which that many exporters restarted asks it; and each
    of its first round's queries alone, one after another: where its time goes."""
    server = psutil.Process(prom.proc.pid)
    floor = list(floor_queries(start, end).values())
    cpu0 = sum(server.cpu_times()[:2])
    first = ask_all(prom.url, floor, end)
    cpu = sum(server.cpu_times()[:2]) - cpu0
    again = [ask_all(prom.url, floor, end) for _ in range(repeats)]
    cpu0 = sum(server.cpu_times()[:2])
    full = ask_all(prom.url, list(exact_queries(start, end).values()), end)
    full_cpu = sum(server.cpu_times()[:2]) - cpu0
    some = [job_fleet.hostname(n) for n in range(0, nodes, 100)]
    [narrowed] = exact_selectors("", [{"hostname": h} for h in some])
    second = ask_all(prom.url, list(exact_queries(start, end, narrowed).values()), end)
    alone = {}
    for name, promql, at in [
            *((n, q, end) for n, q in report_queries(start, end, copies=True).items()),
            *((f"{n} at the start", q, start) for n, q in start_queries().items()),
            (RECHECK, recheck_query(start, end, copies=True), end)]:
        t0 = time.perf_counter()
        http_query(prom.url, promql, 600.0, at)
        alone[name] = time.perf_counter() - t0
    return {"floor_first_s": first, "floor_median_s": statistics.median(again),
            "floor_cpu_s": cpu, "floor_queries": len(floor), "full_s": full,
            "full_cpu_s": full_cpu, "second_nodes": len(some), "second_s": second,
            "alone": alone}


def totals(records: list[dict[str, Any]]) -> dict[str, float]:
    """The records' GPU seconds and idle GPU seconds added up."""
    return {"gpu_s": sum(r["gpu_s"] or 0.0 for r in records),
            "idle_gpu_s": sum(r["idle_gpu_s"] or 0.0 for r in records)}


def steps_only(fetch: Fetch) -> Fetch:
    """``fetch`` as it reads a Prometheus without the recording rules' copies: the raw series
    at steps (its question whether there are copies answered "none")."""
    def without(url: str, start: float, end: float) -> list[dict[str, Any]]:
        probe = copies_query(start, end)

        def ask(base: str, promql: str, timeout: float, at: float) -> list[dict]:
            return [] if promql == probe else http_query(base, promql, timeout, at)
        return fetch(url, start, end, ask)
    return without


def bench_step(fetch: Fetch, nodes: int, days: float, step: int, repeats: int, seed: int,
               block_s: float | None, full: bool) -> None:
    end = float(int(time.time()) // 60 * 60)
    start = end - days * 86400
    jobs = job_fleet.plan(nodes, start, end, seed)
    times = job_fleet.steps(start, end, step)
    copies = times[::max(1, round(own.COPY_INTERVAL_S / step))]
    truth = job_fleet.truth(jobs, start, end)
    # Prometheus sees a series at an instant only within its lookback (5 min) after a sample:
    # a server scraping less often needs a longer one, and so do these coarser steps
    lookback = max(300, 2 * step)
    with tempfile.TemporaryDirectory(prefix="gputop-bench-report-") as tmp:
        work = Path(tmp)
        built = build_tsdb(work, jobs, times, block_s, copies)
        series = nodes + sum(len(j.nodes) for j in jobs for family in job_fleet.ACCOUNT_FAMILIES
                             if job_fleet.served(j, family, times))
        copied = sum(len(job_fleet.served(j, f, copies)) * len(j.nodes)
                     for j in jobs for f in own.COPIED if f != own.EXPORTER_START)
        copied += nodes * len(copies)
        print(f"{nodes} nodes × 8 GPUs × {days:g} days at a {step} s step: {len(jobs)} jobs "
              f"({truth['jobs']:.0f} running in the range), {series} series, "
              f"{(built['samples'] - copied) / 1e6:.1f} M samples and {copied / 1e6:.2f} M in "
              f"their hourly copies; text {built['text_bytes'] / 2**30:.1f} GiB "
              f"generated in {built['generated_s']:.0f} s, {built['blocks']:.0f} blocks of "
              f"{built['block_bytes'] / 2**20:.0f} MiB written by promtool in "
              f"{built['promtool_s']:.0f} s; lookback {lookback} s", flush=True)
        prom = Prometheus(work, [], interval="15s",
                          extra_flags=(f"--query.lookback-delta={lookback}s",))
        try:
            blocks = settle(prom.url)
            r = time_report(fetch, prom, start, end, repeats)
            w = time_report(steps_only(fetch), prom, start, end, repeats)
            b = breakdown(prom, start, end, nodes, repeats) if full else None
            print(f"  blocks Prometheus held once its compaction settled: {blocks:.0f} "
                  f"({loaded(prom.url):.0f} at the last query)", flush=True)
        finally:
            prom.stop()
    for what, t in (("with the recording rules' copies", r), ("without them (steps)", w)):
        got = totals(t["records"])
        print(f"  fetch_records {what}: first {t['first_s']:.2f} s, then median "
              f"{t['median_s']:.2f} s (max {t['max_s']:.2f} s, {repeats} calls); "
              f"{len(t['records'])} records (one per node and account; "
              f"{len({(x['job'], x['hpc_job']) for x in t['records']})} jobs); "
              f"{t['queries']:.0f} instant queries ({t['range_queries']:.0f} range queries), "
              f"answers {t['answer_bytes'] / 2**20:.1f} MiB; Prometheus CPU "
              f"{t['server_cpu_s']:.2f} s in the first call, RSS "
              f"{t['server_rss'] / 2**20:.0f} MiB; GPU-hours {got['gpu_s'] / 3600:,.0f} (job "
              f"mix: {truth['gpu_s'] / 3600:,.0f}), idle GPU-hours "
              f"{got['idle_gpu_s'] / 3600:,.0f} (job mix: {truth['idle_gpu_s'] / 3600:,.0f})",
              flush=True)
    if b is None:
        return
    print(f"  every sample read once ({b['floor_queries']} queries of increase() or "
          f"min/max_over_time, 4 at a time): first {b['floor_first_s']:.2f} s, then median "
          f"{b['floor_median_s']:.2f} s; Prometheus CPU {b['floor_cpu_s']:.2f} s. "
          f"fetch_records ÷ that: {r['median_s'] / b['floor_median_s']:.2f}×", flush=True)
    print(f"  exact_queries for every node: {b['full_s']:.2f} s, "
          f"Prometheus CPU {b['full_cpu_s']:.2f} s; for {b['second_nodes']} nodes (a second "
          f"round): {b['second_s']:.2f} s", flush=True)
    print("  fetch_records's first round over the copies one query at a time: " + ", ".join(
        f"{name} {seconds:.2f} s" for name, seconds in b["alone"].items()), flush=True)


def nodes_by_step(text: str) -> tuple[int, int]:
    """Parse a run, ``NODESxSTEP`` ("1000x600"), into two positive whole numbers."""
    nodes, x, step = text.partition("x")
    if not (x and nodes.isdigit() and step.isdigit() and int(nodes) > 0 and int(step) > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not NODESxSTEP (e.g. 1000x600)")
    return int(nodes), int(step)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", type=nodes_by_step,
                        default=[(1000, 600), (1000, 1200), (25, 15)],
                        help="NODESxSTEP: nodes of 8 GPUs, seconds between scrapes")
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--no-breakdown", action="store_true",
                        help="time the report alone, not every sample read once beside it")
    parser.add_argument("--block-hours", type=float, default=None,
                        help="write and backfill the text this many hours at a time (blocks "
                             "of at most that), for runs whose whole text promtool cannot map")
    args = parser.parse_args()

    def fetch(url: str, start: float, end: float, ask=http_query) -> list[dict[str, Any]]:
        return fetch_records(url, start, end, timeout=120.0, ask=ask)

    block_s = args.block_hours * 3600 if args.block_hours else None
    for nodes, step in args.runs:
        bench_step(fetch, nodes, args.days, step, args.repeats, args.seed, block_s,
                   not args.no_breakdown)


if __name__ == "__main__":
    main()
