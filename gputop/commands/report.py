"""`gputop report FILE...`: what each job and user used of the GPUs, and what they held idle,
over recordings of the agent stream (`gputop agent > FILE`, the dashboard's `r`), or over a
time range of a Prometheus server that scrapes gputop exporters (``--prometheus URL``).

A table per job and one per user (GPU-hours, idle GPU-hours and their share, kWh, cost at
``--price``, mean SM activity), the top idle holders first, as text, CSV or JSON
(docs/waste.md). Bad input (a file that does not read, a line that is not the stream's, a bad
time) is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from typing import Any

from gputop.core.errors import GputopError, UsageError
from gputop.report.rows import SORT_KEYS
from gputop.report.timerange import WORDS, TimeSpec, needs_end, parse_time, resolve

BY: dict[str, tuple[str, ...]] = {"job": ("jobs",), "user": ("users",)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", metavar="FILE", nargs="*",
                        help="recordings of the agent stream: `gputop agent` output, or the"
                             " .ndjson the dashboard's r writes; several (or one holding several"
                             " hosts) make a cluster")
    parser.add_argument("--prometheus", metavar="URL", default=None,
                        help="report over a range of this Prometheus server, which scrapes"
                             " gputop exporters, instead of files (needs --since); fast over"
                             " days with the rules of `gputop exporter --recording-rules`")
    parser.add_argument("--selector", metavar="MATCHERS", default=None,
                        help='with --prometheus: label matchers such as {job="gpus"}')
    parser.add_argument("--since", metavar="TIME", default=None,
                        help=f"start of the range: {WORDS} (back from the end of the recording,"
                             " or from now)")
    parser.add_argument("--until", metavar="TIME", default=None,
                        help="end of the range, as --since (default: the end of the recording,"
                             " or now)")
    parser.add_argument("--by", choices=tuple(BY), default=None,
                        help="one table: per job or per user (default: both; CSV: per job)")
    parser.add_argument("--sort", choices=SORT_KEYS, default=None, metavar="COLUMN",
                        help="order the rows by COLUMN, biggest figure first, names and times in"
                             " order (default: idle GPU-hours; choices: " + ", ".join(SORT_KEYS)
                             + ")")
    parser.add_argument("--price", type=_price, default=None, metavar="PER_KWH",
                        help="add a cost column: the kWh times this price")
    parser.add_argument("--currency", metavar="LABEL", default=None,
                        help="with --price: the currency the cost column is headed with")
    parser.add_argument("--format", choices=("text", "csv", "json"), default="text",
                        help="text tables (default), CSV (one table) or one JSON document")


def _price(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a price per kWh of 0 or more, not {text!r}")
    return value


@dataclass(frozen=True)
class ReportConfig:
    files: tuple[str, ...] = ()
    prometheus: str | None = None
    selector: str | None = None
    since: TimeSpec | None = None
    until: TimeSpec | None = None
    tables: tuple[str, ...] = ("jobs", "users")
    sort: str | None = None
    price: float | None = None
    currency: str | None = None
    format: str = "text"


def configure(args: argparse.Namespace) -> ReportConfig:
    """Check the command line as a whole; raise UsageError for what cannot go together."""
    files = tuple(args.files)
    if files and args.prometheus is not None:
        raise UsageError("report: name recording FILEs or --prometheus URL, not both")
    if not files and args.prometheus is None:
        raise UsageError("report: name the recordings to read (FILE...) or --prometheus URL")
    if args.selector is not None and args.prometheus is None:
        raise UsageError("--selector picks Prometheus series: it needs --prometheus")
    if args.prometheus is not None and args.since is None:
        raise UsageError("--prometheus needs --since: the start of the range to report on")
    if args.currency is not None and args.price is None:
        raise UsageError("--currency heads the cost column: it needs --price")
    if args.sort == "cost" and args.price is None:
        raise UsageError("--sort cost: there is a cost column only with --price")
    tables: tuple[str, ...]
    if args.by is not None:
        tables = BY[args.by]
    else:  # a CSV file holds one table
        tables = ("jobs",) if args.format == "csv" else ("jobs", "users")
    return ReportConfig(
        files=files, prometheus=args.prometheus, selector=args.selector,
        since=None if args.since is None else parse_time(args.since, "--since"),
        until=None if args.until is None else parse_time(args.until, "--until"),
        tables=tables, sort=args.sort, price=args.price, currency=args.currency,
        format=args.format)


def run(config: ReportConfig) -> int:
    from gputop.report import render
    from gputop.report.rows import job_rows, sort_rows, user_rows

    records, report = _read(config)
    rows = {"jobs": job_rows(records, config.price), "users": user_rows(records, config.price)}
    rows = {name: sort_rows(table, config.sort) for name, table in rows.items()}
    doc = render.Report(**report, rows=rows, tables=config.tables, price=config.price,
                        currency=config.currency)
    sys.stdout.write(render.FORMATS[config.format](doc))
    sys.stdout.flush()
    return 0


def _note(line: str) -> None:
    print(f"gputop report: {line}", file=sys.stderr, flush=True)


def _read(config: ReportConfig) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Return the records of the source and what the report says it covers."""
    if config.prometheus is not None:
        now = time.time()
        since, until = resolve(config.since, config.until, now)
        assert since is not None  # configure asks for --since
        last = until if until is not None else now
        from gputop.cluster.prometheus import PrometheusError
        from gputop.report.prometheus import fetch_records

        try:
            records = fetch_records(config.prometheus, since, last, selector=config.selector,
                                    note=_note)
        except PrometheusError as exc:  # unreachable, not Prometheus, too slow: one line
            raise GputopError(f"--prometheus {config.prometheus}: {exc}") from None
        hosts = sorted({n for r in records for n in r["nodes"]})
        return records, {"source": config.prometheus, "hosts": hosts, "start": since,
                         "end": last, "samples": None}
    from gputop.report.recording import describe, newest_time, read_records

    end: float | None = None
    if needs_end(config.since, config.until):
        end = newest_time(config.files)
        if end is None:
            raise UsageError(f"{describe(config.files)}: no snapshot ends the recording, to count"
                             " --since/--until back from")
    start, stop = resolve(config.since, config.until, end)
    got = read_records(config.files, start, stop)
    return got.records, {"source": describe(config.files), "hosts": got.hosts,
                         "start": got.first, "end": got.last, "samples": got.samples}
