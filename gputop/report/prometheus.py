"""The report's Prometheus source: every job's figures over a time range of a Prometheus server
that scrapes gputop exporters, from the exporter's job and idle families (docs/prometheus.md),
as records in the format ``JobLedger.records`` writes, plus the job's ``nodes``.

Only instant queries at the range's end, one per figure, each summed by Prometheus per account
and node (``GROUP``) with its own range functions over the range: the answer is one series per
job and node whatever the range's length or the number of samples, so a week of a thousand nodes
costs a few round trips (Build 5 of #30), and no raw sample is downloaded.

A counter's figure over the range is read at its edges, not by ``increase()`` (``counted``;
docs/waste.md, "Over Prometheus"): its last value in the range less its value at the range's
start, or the whole last value for an account the exporter opened within the range (its
counters start at 0). So a job's start or end within the range is counted exactly, and the
figures over adjacent ranges add up to the figure over both. ``increase()`` takes a new job's
first scraped value as its baseline (losing what it did before Prometheus first saw it) and
extrapolates to the edges. Reading at the edges has one error: each edge finds the sample of the
last scrape before it, at most a scrape interval plus an exporter interval earlier, so a job
running across an edge is off by up to that much of each of its GPUs' time. Where a counter
reset within the range (an exporter restart, an account seen again after its day of retention),
or began before the range unseen, ``increase()`` is the fallback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from typing import Any

from gputop.cluster.prometheus import (
    PARALLEL_QUERIES,
    PARSE_GRACE_S,
    PrometheusError,
    PrometheusTimeout,
    check_selector,
    check_url,
    hostname_of,
    http_query,
)
from gputop.core.errors import UsageError
from gputop.core.units import MIB
from gputop.exporter import own
from gputop.exporter.node_label import HOSTNAME_LABELS

# What a record is per: the node (either host label the exporter serves) and the account.
GROUP = ", ".join((*HOSTNAME_LABELS["both"], *own.ACCOUNT_LABELS))


def _range(start: float, end: float) -> str:
    """The range as a PromQL duration, in milliseconds (Prometheus's resolution)."""
    return f"{max(1, round((end - start) * 1000))}ms"


def counted(family: str, selector: str, start: float, end: float) -> str:
    """PromQL for how much counter ``family`` (under ``selector``) rose over [start, end],
    evaluated at ``end``, per series: its last value less its value at ``start``; the whole
    last value where the series is new since ``start`` and its account first seen then (it
    started at 0); ``increase()`` where it reset within the range, went down, or started before
    ``start`` unseen (an exporter Prometheus did not scrape yet)."""
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


def queries(start: float, end: float, selector: str = "") -> dict[str, str]:
    """One instant query per figure of a record (its key), each to be evaluated at ``end``, one
    series per node and account; ``selector``: label matchers in braces, or ""."""
    r = _range(start, end)

    def total(family: str) -> str:
        return f"sum by ({GROUP}) ({counted(family, selector, start, end)})"

    return {
        "gpu_s": total(own.JOB_GPU_SECONDS),
        "idle_gpu_s": total(own.IDLE_SECONDS),
        "energy_j": total(own.JOB_ENERGY),
        "idle_energy_j": total(own.IDLE_ENERGY),
        # 0 / 0 (nothing measured) is NaN, which the answer's parser leaves out: None
        "sm_active_pct": f"100 * {total(own.JOB_SM_ACTIVE)} / {total(own.JOB_SM_MEASURED)}",
        "first_seen": f"min by ({GROUP}) (min_over_time({own.JOB_FIRST_SEEN}{selector}[{r}]))",
        "last_seen": f"max by ({GROUP}) (max_over_time({own.JOB_LAST_SEEN}{selector}[{r}]))",
        "peak_memory_mib":
            f"sum by ({GROUP}) (max_over_time({own.JOB_MEMORY}{selector}[{r}])) / {MIB}",
        "gpu_count": f"sum by ({GROUP}) (max_over_time({own.JOB_GPUS}{selector}[{r}]))",
    }


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
                  timeout: float = 30.0, ask: Ask = http_query) -> list[dict[str, Any]]:
    """Every job's records over [start, end] (Unix times) from the Prometheus at ``url``, one
    per node and account (``build_records``), all its queries answered within ``timeout``
    seconds. Raises PrometheusError (PrometheusTimeout for the time) with one line for a URL or
    selector that is not one, a server unreachable or answering something that is not
    Prometheus's, or late; ValueError for a range that ends before it starts."""
    if not end > start:
        raise ValueError(f"the range ends ({end}) before it starts ({start})")
    try:
        base, matchers = check_url(url), check_selector(selector)
    except UsageError as exc:
        raise PrometheusError(str(exc)) from None
    texts = queries(start, end, matchers)
    deadline = time.monotonic() + timeout
    late = PrometheusTimeout(f"Prometheus at {base} did not answer within {timeout:g} s")

    def one(promql: str) -> list[dict]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise late
        return ask(base, promql, left, end)

    pool = ThreadPoolExecutor(PARALLEL_QUERIES, thread_name_prefix="gputop-report")
    try:
        futures = {name: pool.submit(one, promql) for name, promql in texts.items()}
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
                raise type(failure)(str(failure).replace(texts[name], f"the query for {name}")) \
                    from None
            answers[name] = future.result()
    finally:
        # a request still out ends by its own deadline: nothing waits for it
        pool.shutdown(wait=False, cancel_futures=True)
    return build_records(answers, start)
