"""The report's Prometheus source: every job's figures over a time range of a Prometheus server
that scrapes gputop exporters, from the exporter's job and idle families (docs/prometheus.md),
as records in the format ``JobLedger.records`` writes, plus the job's ``nodes``.

Only instant queries, each summed by Prometheus per account and node (``GROUP``): the answer
is one series per job and node whatever the range's length or the number of samples, and no
raw sample is downloaded (Build 5 of #30; docs/waste.md, "Over Prometheus"). First one asking
whether the range holds the recording rules' copies, then one round: ``queries`` at the range's
end, ``start_queries`` at its start, and ``recheck_query``.

A counter's figure over the range is read at its edges (``edges``): its newest value less its
value at the range's start, or the whole newest value for an account new within the range (its
counters start at 0). So a job's start or end within the range is counted exactly, and the
figures over adjacent ranges add up. Its newest value is the counter at the range's end, else
(a job whose series the exporter no longer serves) its highest between the edges
(``across``): from the hourly copies the recording rules of ``gputop exporter
--recording-rules`` keep (``own.copy_of``; one sample an hour, however often Prometheus
scrapes), else, where the range holds no copy (``copies_query``), from the raw series at steps
``STEP_S`` apart. The exporter serves an ended job's counters flat for ``OWNER_RETENTION_S``,
twice the step and many copy intervals, so a copy or a step after its end reads its final
value. The peaks and seen times are read alike, from gauges the exporter keeps as long as the
counters. Each query reads the raw series at one edge only, so that Prometheus opens the
blocks around that edge, not every block the range spans.

That holds while the node's counters only grow and were read at the range's start. Where they
may not have (``recheck_query``: an exporter started or restarted within the range, which zeroes
its counters and forgets its ended jobs early; a node no longer scraped at the range's end;
copies that began more than a step into the range; and from ``edges``: a job running at the
start that Prometheus did not scrape within its lookback; an account the exporter forgot and
opened again), that node's records are read again by ``exact_queries``, which read every
sample of the node's series: ``counted``.

Each edge finds the sample of the last scrape before it, at most a scrape interval plus an
exporter interval earlier, so a job running across an edge is off by up to that much of each
of its GPUs' time.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from typing import Any

from gputop.analysis.accounting import OWNER_RETENTION_S
from gputop.cluster.prometheus import (
    PARALLEL_QUERIES,
    PARSE_GRACE_S,
    PrometheusError,
    PrometheusTimeout,
    check_selector,
    check_url,
    hostname_of,
    http_query,
    one_of,
    with_matcher,
)
from gputop.core.errors import UsageError
from gputop.core.units import MIB
from gputop.exporter import own
from gputop.exporter.node_label import HOSTNAME_LABELS

# What a node is told by (either host label the exporter serves), and what a record is per.
HOST = ", ".join(HOSTNAME_LABELS["both"])
GROUP = ", ".join((*HOSTNAME_LABELS["both"], *own.ACCOUNT_LABELS))
# How far apart the range is read for the series the exporter no longer serves at its end:
# half the time it keeps an ended job's series flat, so that a step falls after every job's
# end and before the exporter forgets it, with room for the scrape's lag.
STEP_S = OWNER_RETENTION_S / 2
# The query that names the nodes to read again in full (``recheck_query``), among the figures',
# and the one that asks whether the recording rules' copies are there (``copies_query``).
RECHECK = "nodes to re-read"
COPIES = "hourly copies"
START = "at the start: "  # the names of the queries asked at the range's start
NO_COPIES = ("no hourly copies of the job families in this range: reading the raw series at "
             "steps, slower over days (load the rules `gputop exporter --recording-rules` "
             "writes into Prometheus)")

_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"')


def _range(start: float, end: float) -> str:
    """The range as a PromQL duration, in milliseconds (Prometheus's resolution)."""
    return f"{max(1, round((end - start) * 1000))}ms"


def across(family: str, selector: str, start: float, end: float, fn: str,
           copies: bool) -> str:
    """PromQL for ``family``'s (under ``selector``) ``fn`` (max or min) over the range: read
    from its hourly copies where the recording rules keep them (``copies``: one sample an
    hour), else from the raw series at steps ``STEP_S`` apart."""
    if copies:
        return f"{fn}_over_time({own.copy_of(family)}{selector}[{_range(start, end)}])"
    return f"{fn}_over_time({family}{selector}[{_range(start, end)}:{round(STEP_S)}s])"


def newest(family: str, selector: str, start: float, end: float, fn: str = "max",
           copies: bool = False) -> str:
    """PromQL for ``family`` (under ``selector``) at ``end``, else (a series no longer served
    there) its ``fn`` (max or min) over the range (``across``): for a value that only grows
    while the exporter keeps it (a counter, a peak, a last-seen time), its newest."""
    return f"({family}{selector} or {across(family, selector, start, end, fn, copies)})"


def counted(family: str, selector: str, start: float, end: float) -> str:
    """PromQL for how much counter ``family`` (under ``selector``) rose over [start, end],
    evaluated at ``end``, per series, from every sample of the range: its last value less its
    value at ``start``; the whole last value where the series is new since ``start`` and its
    account first seen then (it started at 0); ``increase()`` where it reset within the range,
    went down, or started before ``start`` unseen (an exporter Prometheus did not scrape
    yet)."""
    r = _range(start, end)
    counter = family + selector
    last = f"last_over_time({counter}[{r}])"
    before = f"({counter} offset {r})"
    # a counter lower anywhere in the range than at its start was reset after it
    since = f"(({last} - {before}) and ((min_over_time({counter}[{r}]) - {before}) >= 0))"
    opened = f"(last_over_time({own.JOB_FIRST_SEEN}{selector}[{r}]) >= {start:.3f})"
    new = f"(({last} unless {before}) and {opened})"
    return (f"((({since} or {new}) unless (resets({counter}[{r}]) > 0))"
            f" or increase({counter}[{r}]))")


# The counters of a record, by the key of their rise over the range; the two SM counters make
# one figure, the mean SM activity (their rises' ratio), not two.
COUNTERS = {
    "gpu_s": own.JOB_GPU_SECONDS,
    "idle_gpu_s": own.IDLE_SECONDS,
    "energy_j": own.JOB_ENERGY,
    "idle_energy_j": own.IDLE_ENERGY,
    "sm_active_s": own.JOB_SM_ACTIVE,
    "sm_measured_s": own.JOB_SM_MEASURED,
}
SM = ("sm_active_s", "sm_measured_s")


def _figures(total: Callable[[str], str], gauge: Callable[[str, str], str]) -> dict[str, str]:
    """One query per figure of a record (its key), from ``total`` (a counter's rise, summed per
    node and account) and ``gauge`` (a gauge's max or min over the range, per series)."""
    active, measured = (total(COUNTERS[key]) for key in SM)
    return {
        **{key: total(family) for key, family in COUNTERS.items() if key not in SM},
        # 0 / 0 (nothing measured) is NaN, which the answer's parser leaves out: None
        "sm_active_pct": f"100 * {active} / {measured}",
        "first_seen": f"min by ({GROUP}) ({gauge(own.JOB_FIRST_SEEN, 'min')})",
        **_gauges(gauge),
    }


def _gauges(gauge: Callable[[str, str], str]) -> dict[str, str]:
    """The record's figures read from gauges that only grow (``gauge``: a gauge's max, per
    series); the first-seen time, which each kind of query reads its own way, is not here."""
    return {
        "last_seen": f"max by ({GROUP}) ({gauge(own.JOB_LAST_SEEN, 'max')})",
        "peak_memory_mib": f"sum by ({GROUP}) ({gauge(own.JOB_MEMORY_PEAK, 'max')}) / {MIB}",
        "gpu_count": f"sum by ({GROUP}) ({gauge(own.JOB_GPUS_PEAK, 'max')})",
    }


def queries(start: float, end: float, selector: str = "", copies: bool = False) -> dict[str, str]:
    """The instant queries to evaluate at ``end``, one series per node and account: each
    counter's newest value (``COUNTERS``' keys) and the gauges' figures, read at ``end`` and,
    between the edges, from the hourly copies (``copies``) or the raw series at steps
    (``newest``, ``across``), and ``first_low``, the lowest first-seen time between them (a job
    opened again has two); ``selector``: label matchers in braces, or "".

    Each reads the raw series at ``end`` alone: what they held at ``start`` is asked at
    ``start`` (``start_queries``), so that Prometheus opens only the blocks around each edge
    for the raw series, however many a long range spans."""
    def last(family: str, fn: str) -> str:
        return newest(family, selector, start, end, fn, copies)

    out = {key: f"sum by ({GROUP}) {last(family, 'max')}" for key, family in COUNTERS.items()}
    # the newest first-seen time: an account opened again has a later one than its lowest
    out["first_seen"] = f"max by ({GROUP}) {last(own.JOB_FIRST_SEEN, 'max')}"
    out.update(_gauges(last))
    out["first_low"] = (f"min by ({GROUP}) "
                        f"({across(own.JOB_FIRST_SEEN, selector, start, end, 'min', copies)})")
    return out


def start_queries(selector: str = "") -> dict[str, str]:
    """The instant queries to evaluate at the range's start, one series per node and account:
    each counter's value there (``COUNTERS``' keys) and ``first_seen``, its first-seen time
    (absent: the account was not scraped within the lookback before the start)."""
    out = {key: f"sum by ({GROUP}) ({family}{selector})" for key, family in COUNTERS.items()}
    out["first_seen"] = f"min by ({GROUP}) ({own.JOB_FIRST_SEEN}{selector})"
    return out


def edges(at_end: dict[str, list[dict]], at_start: dict[str, list[dict]],
          start: float) -> tuple[dict[str, list[dict]], list[dict[str, str]]]:
    """The answers to ``queries`` (at the range's end) and ``start_queries`` as the figures of
    each node and account (by a record's keys, as ``build_records`` reads them), and the host
    labels of the nodes to read again in full for an account the edges cannot read. Pure.

    A counter's figure is its rise over the range: its newest value less its value at the
    start, or the whole newest value for an account new within the range (its counters start
    at 0). So a job's start or end within the range is counted exactly, and the figures over
    adjacent ranges add up. The mean SM activity is the ratio of the two SM counters' rises
    (none where nothing was measured). A node is read again for an account running at the
    start (first seen before it) that Prometheus did not scrape within its lookback there,
    whose value at the start is unknown, or one the exporter forgot after its day and opened
    again within the range (two first-seen times), whose counters started over."""
    def by_key(answers: dict[str, list[dict]]) -> dict[str, dict[tuple[str, ...], float]]:
        return {name: {_key(s["labels"]): s["value"] for s in series}
                for name, series in answers.items()}

    last, first = by_key(at_end), by_key(at_start)
    labels_of = {_key(s["labels"]): s["labels"] for series in at_end.values() for s in series}
    rise = {key: {k: v - first[key].get(k, 0.0) for k, v in last[key].items()}
            for key in COUNTERS}
    figures = {key: rise[key] for key in COUNTERS if key not in SM}
    active, measured = (rise[key] for key in SM)
    figures["sm_active_pct"] = {k: 100.0 * active.get(k, 0.0) / m
                                for k, m in measured.items() if m > 0}
    for name, values in last.items():  # the gauges' figures, as read at the end
        if name not in COUNTERS and name != "first_low":
            figures[name] = values
    suspects: dict[tuple[str, ...], dict[str, str]] = {}
    for k, newest_first in last["first_seen"].items():
        lowest = min(last["first_low"].get(k, newest_first), first["first_seen"].get(k, newest_first))
        unseen = newest_first < start and k not in first["first_seen"]
        if unseen or newest_first > lowest:
            host = {n: v for n, v in labels_of[k].items() if n in HOSTNAME_LABELS["both"]}
            suspects[_node(host)] = host
    answers = {name: [{"labels": labels_of[k], "value": v} for k, v in values.items()]
               for name, values in figures.items()}
    return answers, list(suspects.values())


def exact_queries(start: float, end: float, selector: str = "") -> dict[str, str]:
    """The queries of ``queries`` reading every sample of the range (``counted``, and the
    gauges' max or min over it): exact through a counter's reset, at a cost that grows with
    the samples. For the nodes ``recheck_query`` names, under a selector naming them."""
    r = _range(start, end)
    return _figures(
        lambda family: f"sum by ({GROUP}) ({counted(family, selector, start, end)})",
        lambda family, fn: f"{fn}_over_time({family}{selector}[{r}])")


def node_selector(selector: str) -> str:
    """The selector's matchers less those on an account's labels, in braces (or ""): what
    picks the exporters, whose node-wide series carry no account label."""
    kept = [m.group(0) for m in _MATCHER.finditer(selector)
            if m.group(1) not in own.ACCOUNT_LABELS]
    return "{" + ", ".join(kept) + "}" if kept else ""


def recheck_query(start: float, end: float, selector: str = "", copies: bool = False) -> str:
    """PromQL for the nodes whose figures over the range ``queries`` may miss, one series per
    node (its host labels), to be read again by ``exact_queries`` (``edges`` names those with
    an account the edges cannot read):

    - its exporter started within the range (a restart zeroes the counters and forgets the
      ended jobs before their day is out, between two copies or steps);
    - it was scraped at the range's start or within it, and not at its end (an exporter gone
      with its jobs running: what they did after it was last read between the edges is
      nowhere);
    - with ``copies``: it was read within the range, and the copies of it began more than
      ``STEP_S`` after the range's start (the recording rules were loaded later: a job that
      ended early in the range may have been forgotten before any copy held it).

    Its series are each exporter's own, one per node: cheap however many jobs ran.
    """
    r = _range(start, end)
    node = node_selector(selector)
    began = own.EXPORTER_START + node
    restarted = (f"(max by ({HOST}) {newest(own.EXPORTER_START, node, start, end, copies=copies)}"
                 f" > {start:.3f})")
    read = (f"(max by ({HOST}) ({began} offset {r})"
            f" or max by ({HOST}) ({across(own.EXPORTER_START, node, start, end, 'max', copies)}))")
    out = f"{restarted} or ({read} unless max by ({HOST}) ({began}))"
    if copies:
        # the copies in the range's first STEP_S (all of it, if shorter)
        early = min(STEP_S, end - start)
        since = f" offset {_range(start + early, end)}" if start + early < end else ""
        copied = (f"max by ({HOST}) (last_over_time({own.copy_of(own.EXPORTER_START)}{node}"
                  f"[{_range(start, start + early)}]{since}))")
        out = f"{out} or ({read} unless {copied})"
    return out


def copies_query(start: float, end: float, selector: str = "") -> str:
    """PromQL, evaluated at ``end``, for how many nodes the recording rules copied within the
    range: none, and the report reads the raw series at steps."""
    return (f"count(last_over_time({own.copy_of(own.EXPORTER_START)}{node_selector(selector)}"
            f"[{_range(start, end)}]))")


def _node(labels: dict[str, str]) -> tuple[str, ...]:
    return tuple(labels.get(name, "") for name in HOSTNAME_LABELS["both"])


def exact_selectors(selector: str, nodes: Iterable[dict[str, str]]) -> list[str]:
    """Selectors that cover ``nodes`` (each its host labels) under ``selector``: one per host
    label that names some of them (the selector itself where a node has none)."""
    by_label: dict[str, set[str]] = {}
    for labels in nodes:
        name = next((n for n in HOSTNAME_LABELS["both"] if labels.get(n)), None)
        if name is None:
            return [selector]
        by_label.setdefault(name, set()).add(labels[name])
    return [with_matcher(selector, one_of(name, values))
            for name, values in sorted(by_label.items())]


def _key(labels: dict[str, str]) -> tuple[str, ...]:
    return tuple(labels.get(name, "") for name in (*HOSTNAME_LABELS["both"], *own.ACCOUNT_LABELS))


def build_records(answers: dict[str, list[dict]], start: float) -> list[dict[str, Any]]:
    """The answers to ``queries`` (each a vector as ``parse_vector`` gives it) as one record per
    node and account seen in the range (last seen at or after ``start``), the most idle GPU time
    first. Pure.

    A figure no series answered is 0 for the GPU and idle seconds (the exporter serves those for
    every account), None for the energy (the GPU reported none) and the SM activity (none
    measured). Prometheus has no process start times (``started`` is None) and no GPU names per
    job: ``gpus`` is empty and ``gpu_count`` the most GPUs the job held at once."""
    by: dict[str, dict[tuple[str, ...], float]] = {
        name: {_key(s["labels"]): s["value"] for s in series} for name, series in answers.items()}
    labels_of: dict[tuple[str, ...], dict[str, str]] = {}
    for series in answers.values():
        for s in series:
            labels_of.setdefault(_key(s["labels"]), s["labels"])
    out = []
    for key, labels in labels_of.items():
        figures = {name: values[key] for name, values in by.items() if key in values}
        last_seen = figures.get("last_seen")
        if last_seen is None or last_seen < start:
            continue  # a job the exporter keeps that ended before the range
        out.append(_record(labels, figures, last_seen))
    return sorted(out, key=lambda r: (-r["idle_gpu_s"], -r["gpu_s"], r["job"], r["nodes"]))


def _record(labels: dict[str, str], figures: dict[str, float], last_seen: float) -> dict[str, Any]:
    def figure(name: str, digits: int, default: float | None = None) -> float | None:
        value = figures.get(name)
        return default if value is None else round(value, digits)

    user = labels.get("user") or None
    node = hostname_of(labels)
    return {
        "job": labels.get("workload", ""), "inferred": labels.get("inferred") == "true",
        "hpc_job": labels.get("hpc_job") or None, "user": user,
        "users": [user] if user else [], "gpus": [],
        "gpu_count": round(figures.get("gpu_count", 0.0)),
        "first_seen": figures.get("first_seen", last_seen), "last_seen": last_seen,
        "started": None,
        "gpu_s": figure("gpu_s", 3, 0.0), "idle_gpu_s": figure("idle_gpu_s", 3, 0.0),
        "energy_j": figure("energy_j", 3), "idle_energy_j": figure("idle_energy_j", 3),
        "sm_active_pct": figure("sm_active_pct", 2),
        "peak_memory_mib": figure("peak_memory_mib", 1, 0.0),
        "nodes": [node] if node else [],
    }


# (base URL, PromQL, timeout in seconds, the Unix time it is evaluated at) -> the vector
Ask = Callable[[str, str, float, float], list[dict]]


def fetch_records(url: str, start: float, end: float, *, selector: str | None = None,
                  timeout: float = 30.0, ask: Ask = http_query,
                  note: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Every job's records over [start, end] (Unix times) from the Prometheus at ``url``, one
    per node and account (``build_records``), all its queries answered within ``timeout``
    seconds: ``queries``, ``start_queries`` and ``recheck_query`` together, then, where those
    name nodes, ``exact_queries`` for those nodes, whose answers replace theirs. ``note`` hears
    one line, before the figures are asked, where a range longer than a step holds no hourly
    copies (the slow way over days, and how to make it fast). Raises PrometheusError
    (PrometheusTimeout for the time) with one line for a URL or selector that is not one, a
    server unreachable or answering something that is not Prometheus's, or late; ValueError
    for a range that ends before it starts."""
    if not end > start:
        raise ValueError(f"the range ends ({end}) before it starts ({start})")
    try:
        base, matchers = check_url(url), check_selector(selector)
    except UsageError as exc:
        raise PrometheusError(str(exc)) from None
    deadline = time.monotonic() + timeout
    late = PrometheusTimeout(f"Prometheus at {base} did not answer within {timeout:g} s")

    def one(promql: str, at: float) -> list[dict]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise late
        return ask(base, promql, left, at)

    def answer_all(texts: dict[str, tuple[str, float]]) -> dict[str, list[dict]]:
        futures = {name: pool.submit(one, *text) for name, text in texts.items()}
        wait_all(futures.values(), max(0.0, deadline - time.monotonic()) + PARSE_GRACE_S)
        answers: dict[str, list[dict]] = {}
        for name, future in futures.items():
            if not future.done():
                raise late
            failure = future.exception()
            if isinstance(failure, PrometheusTimeout):
                raise late from None
            if isinstance(failure, PrometheusError):
                # its line names the query, a screenful of PromQL: the figure says which
                raise type(failure)(str(failure).replace(texts[name][0],
                                                         f"the query for {name}")) from None
            answers[name] = future.result()
        return answers

    pool = ThreadPoolExecutor(PARALLEL_QUERIES, thread_name_prefix="gputop-report")
    try:
        copies = bool(answer_all({COPIES: (copies_query(start, end, matchers), end)})[COPIES])
        if not copies and end - start > STEP_S and note is not None:
            note(NO_COPIES)
        at_end = {name: (promql, end)
                  for name, promql in queries(start, end, matchers, copies).items()}
        at_start = {START + name: (promql, start)
                    for name, promql in start_queries(matchers).items()}
        answers = answer_all({**at_end, **at_start,
                              RECHECK: (recheck_query(start, end, matchers, copies), end)})
        figures, suspects = edges({name: answers[name] for name in at_end},
                                  {name: answers[START + name] for name in start_queries()},
                                  start)
        recheck = {_node(labels): labels for labels in [
            *(s["labels"] for s in answers[RECHECK]), *suspects]}
        exact: dict[str, list[dict]] = {}
        for narrowed in exact_selectors(matchers, recheck.values()) if recheck else ():
            texts = {name: (promql, end)
                     for name, promql in exact_queries(start, end, narrowed).items()}
            for name, series in answer_all(texts).items():
                exact.setdefault(name, []).extend(series)
    finally:
        # a request still out ends by its own deadline: nothing waits for it
        pool.shutdown(wait=False, cancel_futures=True)
    return build_records(merge(figures, exact, set(recheck)), start)


def merge(answers: dict[str, list[dict]], exact: dict[str, list[dict]],
          nodes: set[tuple[str, ...]]) -> dict[str, list[dict]]:
    """``answers`` with the series of ``nodes`` (each its host labels' values) taken from
    ``exact`` instead. Pure."""
    return {name: [s for s in series if _node(s["labels"]) not in nodes]
            + [s for s in exact.get(name, []) if _node(s["labels"]) in nodes]
            for name, series in answers.items()}
