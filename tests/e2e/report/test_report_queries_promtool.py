"""The report's Prometheus source (`gputop.report.prometheus.fetch_records`) over series shaped
as the exporter serves them, backfilled by promtool into a real Prometheus: four days of six
nodes sampled every minute, read over the three days from START to END. Each case is one job,
and each needs its own part of the source:

- n1 reads at the edges and at steps alone: a steady job, one new within the range, one that
  ended within it and whose series the exporter forgot before END (read at a step), one that
  ended before the range (no record);
- n2..n6 are the nodes `recheck_query` names, read again in full (`exact_queries`): an exporter
  that restarted with a job running (its counter reset), a node Prometheus did not scrape around
  START, an account forgotten after its day and opened again, a node gone before END with its
  job running, an exporter that restarted with no job running but an ended one, which it forgot
  before its day was out.

A second Prometheus holds the same series and the hourly copies the recording rules of `gputop
exporter --recording-rules` keep, backfilled from the first by `promtool tsdb create-blocks-from
rules` from COPIED_FROM on: the report reads the copies between the edges, with the same
figures. A third holds copies from COPIED_LATE on, after job 3's series was forgotten: the report
reads every node again in full there, and job 3 is still counted.

A figure read at the edges is exact for the samples it read; one that falls back on
`increase()` (a reset, a start not scraped) is off by its extrapolation, within a few sample
intervals here."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from gputop.cluster.prometheus import http_query
from gputop.exporter import own
from gputop.exporter.recording_rules import recording_rules
from gputop.report.prometheus import STEP_S, fetch_records, queries, start_queries
from tests.support.paths import ROOT
from tests.support.prom_harness import Prometheus, find

M, H, D = 60, 3600, 86400
INTERVAL = M  # the scrape interval of the backfilled series; Prometheus's lookback is 5 min
KEEP = D  # how long the exporter serves an ended job's series (OWNER_RETENTION_S)
# seconds after T0 (a day boundary, so the steps at multiples of STEP_S are sample times):
# each edge 30 s after a sample, as a scrape's lag puts it
START, END = D + 30, 4 * D + 30
RESTART = 2 * D + 3 * H  # n2's and n6's exporters are down two samples, then count from 0
BACK = RESTART + 2 * M
UNSCRAPED = (D - 10 * M, D + 10 * M)  # n3 not scraped around START
GONE = 3 * D + 5 * H  # n5 scraped no more from here
COPIED_FROM = 12 * H  # the recording rules' first copy (from the day they were loaded)
COPIED_LATE = 2 * D + 12 * H  # the third Prometheus's: after job 3's series was forgotten
# the queries asked before the second round: whether there are copies, then one round
FIRST = 1 + len(queries(0, 1)) + len(start_queries()) + 1


@dataclass(frozen=True)
class Segment:
    """One account's series as one exporter served it: counting from ``opened`` (its first-seen
    time) to ``ended``, kept flat until ``until`` (forgotten then, or dropped by a restart)."""

    node: str
    workload: str
    opened: float
    ended: float
    until: float
    gpus: int = 1

    def value(self, t: float) -> float:
        return self.gpus * (min(t, self.ended) - self.opened)


def kept(node: str, workload: str, opened: float, ended: float, gpus: int = 1) -> Segment:
    return Segment(node, workload, opened, ended, ended + KEEP, gpus)


RUNNING = 10 * D
SEGMENTS = (
    kept("n1", "job 1", -H, RUNNING, gpus=2),
    kept("n1", "job 2", 2 * D + 7 * M, RUNNING),
    kept("n1", "job 3", 12 * H, D + 6 * H),
    kept("n1", "job 4", H, 20 * H),
    Segment("n2", "job 5", -H, RUNNING, RESTART - M),  # the restart resets it
    kept("n2", "job 5", BACK, RUNNING),
    kept("n3", "job 7", -2 * H, RUNNING),
    kept("n4", "python serve.py", -12 * H, D + 2 * H),
    kept("n4", "python serve.py", 2 * D + 4 * H, 3 * D),  # opened again after its day
    kept("n5", "job 9", -H, RUNNING),
    Segment("n6", "job 6", D + 12 * H, 2 * D + H, RESTART - M),  # forgotten before its day
)
NODES = ("n1", "n2", "n3", "n4", "n5", "n6")
RESTARTED = ("n2", "n6")

# job: (GPU seconds the exporters counted from START's sample to END's, how far the figure may
# be from it: 0 where read at the edges, else increase()'s extrapolation and what it missed)
WANT = {
    "job 1": (2 * 3 * D, 0),  # steady: END's value less START's
    "job 2": (2 * D - 7 * M, 0),  # new within the range: all of it, from 0
    "job 3": (6 * H, 0),  # ended within: its final value at a step, less START's
    # n2's restart: the counter before it less START's, plus all it counted after
    "job 5": ((RESTART - M - D) + (4 * D - BACK), 2 * INTERVAL),
    "job 6": (13 * H, 0),  # ended and forgotten at the restart, before any step read it
    # START not scraped: increase() from the first sample after it, which misses the gap
    "job 7": (3 * D, UNSCRAPED[1] - D + 2 * INTERVAL),
    "python serve.py": (2 * H + 20 * H, 2 * INTERVAL),  # its two lives in the range
    "job 9": (GONE - M - D, 0),  # gone with the job running: to its last sample
}


def labels(node: str, workload: str | None = None) -> str:
    out = {"instance": f"{node}:9400", "job": "gpus", "hostname": node}
    if workload is not None:
        inferred = not workload.startswith("job ")
        out |= {"user": "alice", "hpc_job": "" if inferred else workload.split()[1],
                "workload": workload, "inferred": "true" if inferred else "false"}
    return ",".join(f'{k}="{v}"' for k, v in out.items())


def up(node: str, t: float) -> bool:
    """Whether Prometheus scraped ``node`` at ``t``."""
    return not ((node in RESTARTED and RESTART <= t < BACK)
                or (node == "n3" and UNSCRAPED[0] < t < UNSCRAPED[1])
                or (node == "n5" and t >= GONE))


def openmetrics(t0: float) -> str:
    """Every series at every minute from T0 to END, as the exporters served them."""
    times = [k * INTERVAL for k in range(int(END // INTERVAL) + 1)]
    out = []
    families = ((own.JOB_GPU_SECONDS, "counter", Segment.value),
                (own.JOB_FIRST_SEEN, "gauge", lambda s, t: t0 + s.opened),
                (own.JOB_LAST_SEEN, "gauge", lambda s, t: t0 + min(t, s.ended)),
                (own.JOB_GPUS_PEAK, "gauge", lambda s, t: s.gpus))
    for family, kind, value in families:
        out.append(f"# TYPE {family.removesuffix('_total')} {kind}\n")
        for s in SEGMENTS:
            head = f"{family}{{{labels(s.node, s.workload)}}}"
            out += [f"{head} {value(s, t)} {t0 + t:.0f}\n" for t in times
                    if s.opened <= t <= s.until and up(s.node, t)]
    out.append(f"# TYPE {own.EXPORTER_START} gauge\n")
    for node in NODES:
        out += [f"{own.EXPORTER_START}{{{labels(node)}}} "
                f"{t0 + (BACK if node in RESTARTED and t >= BACK else -D)} {t0 + t:.0f}\n"
                for t in times if up(node, t)]
    return "".join(out) + "# EOF\n"


def with_copies(raw: Prometheus, t0: float, since: float, work, data) -> Prometheus:
    """A Prometheus on ``work`` holding ``data``'s blocks and the copies the recording rules
    would have kept from ``since`` on, backfilled from ``raw`` by promtool."""
    rules = work / "rules.yml"
    rules.write_text(recording_rules())
    subprocess.run([find("promtool"), "tsdb", "create-blocks-from", "rules",
                    f"--start={t0 + since:.0f}", f"--end={t0 + END:.0f}", f"--url={raw.url}",
                    f"--output-dir={work / 'copies'}", str(rules)],
                   check=True, capture_output=True, timeout=120)
    for block in [*data.iterdir(), *(work / "copies").iterdir()]:
        if (block / "meta.json").is_file():
            shutil.copytree(block, work / "data" / block.name)
    return Prometheus(work, [])


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    """The first Prometheus (the series alone), the second (the series and their copies from
    COPIED_FROM) and the third (from COPIED_LATE), and T0."""
    work = tmp_path_factory.mktemp("report-steps")
    t0 = (time.time() // D - 6) * D  # days ago: END is in the past
    text = work / "series.om"
    text.write_text(openmetrics(t0))
    subprocess.run([find("promtool"), "tsdb", "create-blocks-from", "openmetrics",
                    "--max-block-duration=500h", str(text), str(work / "data")], check=True,
                   capture_output=True, timeout=120)
    servers = [Prometheus(work, [])]
    try:
        for since in (COPIED_FROM, COPIED_LATE):
            servers.append(with_copies(servers[0], t0, since,
                                       tmp_path_factory.mktemp("report-copies"), work / "data"))
        yield (*servers, t0)
    finally:
        for server in servers:
            server.stop()


def asking(asked: list[str]):
    def ask(base: str, promql: str, timeout: float, at: float) -> list[dict]:
        asked.append(promql)
        return http_query(base, promql, timeout, at)
    return ask


@pytest.mark.parametrize("copies", [False, True], ids=["steps", "copies"])
def test_each_job_over_the_range_from_the_edges_and_the_nodes_read_again(prom, copies):
    raw, copied, _, t0 = prom
    assert STEP_S == KEEP / 2
    asked: list[str] = []
    records = fetch_records((copied if copies else raw).url, t0 + START, t0 + END,
                            ask=asking(asked))
    got = {r["job"]: r for r in records}
    assert "job 4" not in got  # ended before the range
    assert {name: r["nodes"] for name, r in got.items()} == {
        s.workload: [s.node] for s in SEGMENTS if s.workload in WANT}
    for name, (want, off) in WANT.items():
        assert abs(got[name]["gpu_s"] - want) <= off + 1e-3, (name, got[name]["gpu_s"], want)
    # the peak and the seen times of a job whose series was gone at END, read between the edges
    assert got["job 3"]["gpu_count"] == 1 and got["job 1"]["gpu_count"] == 2
    assert got["job 3"]["last_seen"] == t0 + D + 6 * H
    assert got["job 2"]["first_seen"] == t0 + 2 * D + 7 * M
    # between the edges, the copies alone where they are, else the raw series at steps
    first = "\n".join(asked[1:FIRST])
    assert (":hourly[" in first) is copies and (f":{round(STEP_S)}s]" in first) is not copies

    # one second round, every figure again for n2..n6 alone
    again = [q for q in asked if "hostname=~" in q]
    assert len(asked) == FIRST + len(again)
    assert all('hostname=~"n2|n3|n4|n5|n6"' in q for q in again)


def test_a_range_that_starts_long_before_the_copies_is_read_in_full(prom):
    """The rules were loaded more than half a day into the range, after job 3 ended and its
    series was forgotten: no copy holds its figures, so every node is read again in full."""
    raw, _, late, t0 = prom
    asked: list[str] = []
    records = fetch_records(late.url, t0 + START, t0 + END, ask=asking(asked))
    assert records == fetch_records(raw.url, t0 + START, t0 + END)
    assert {r["job"] for r in records} == set(WANT)
    assert any(":hourly[" in q for q in asked)  # the copies are there, later in the range
    assert all('hostname=~"n1|n2|n3|n4|n5|n6"' in q for q in asked[FIRST:]) and asked[FIRST:]


def test_promtool_accepts_the_rule_file_the_command_writes(tmp_path):
    """`gputop exporter --recording-rules FILE`, the real process, through `promtool check`."""
    path = tmp_path / "report.rules.yml"
    subprocess.run([sys.executable, "-m", "gputop", "exporter", "--recording-rules", str(path)],
                   cwd=ROOT, check=True, capture_output=True, timeout=30)
    out = subprocess.run([find("promtool"), "check", "rules", str(path)], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(own.COPIED)} rules found" in out.stdout
