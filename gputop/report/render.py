"""The report written out: a text table per table (jobs first), CSV (one table: a CSV file holds
one), or one JSON document. A figure no source reported is ``N/A`` in text, empty in CSV and
``null`` in JSON, never 0.

CSV and JSON carry each column by its key (what ``--sort`` takes), the figures unscaled: hours,
kWh, percent, MiB and Unix times, rounded to what the measurement carries, plus the job's
scheduler id, whether gputop inferred it, and the nodes by name.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gputop.core import jsonout
from gputop.core.formatting import NA, mib
from gputop.core.visible import visible
from gputop.report.rows import JOB_COLUMNS, USER_COLUMNS, Column, columns

INFERRED_MARK = "≈"  # as the grouped process table marks a job gputop inferred
JOB_WIDTH = 40  # the text table's job column at most: a command line can be any length
_DIGITS = {"hours": 4, "kwh": 4, "money": 4, "pct": 2, "time": 3, "mib": 1}
_EXTRA = {"jobs": ("inferred", "hpc_job", "hosts"), "users": ("hosts",)}
TABLES = {"jobs": JOB_COLUMNS, "users": USER_COLUMNS}


@dataclass(frozen=True)
class Report:
    """What the report covers and its rows. ``samples`` is None for a source that does not
    count them (Prometheus); ``tables`` names the tables shown, jobs first."""

    source: str  # what was read: file names, or the Prometheus server
    hosts: Sequence[str]
    start: float | None
    end: float | None
    samples: int | None
    rows: dict[str, list[dict[str, Any]]]  # "jobs", "users"
    tables: Sequence[str] = ("jobs", "users")
    price: float | None = None  # per kWh
    currency: str | None = None


def text(report: Report) -> str:
    """Return the report as text: a line on what it covers, then each table with a title."""
    out = [_heading(report)]
    for name in report.tables:
        cols = columns(TABLES[name], report.price is not None)
        out += ["", name.capitalize(), _table(cols, report.rows[name], report.currency)]
    return "\n".join(out) + "\n"


def _heading(report: Report) -> str:
    n = len(report.hosts)
    nodes = f"{n} node{'s' * (n != 1)} ({', '.join(visible(h) for h in report.hosts)})" if n \
        else "no node"
    span = ""
    if report.start is not None and report.end is not None:
        span = (f" from {_time(report.start)} to {_time(report.end)}"
                f" ({_span(report.end - report.start)})")
    samples = "" if report.samples is None else f", {report.samples} samples"
    price = ""
    if report.price is not None:
        price = f"; cost at {report.price:g}{_unit(report.currency)} per kWh"
    return f"gputop report of {visible(report.source)}: {nodes}{samples}{span}{price}"


def _span(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _unit(currency: str | None) -> str:
    return f" {visible(currency)}" if currency else ""


def _table(cols: list[Column], rows: list[dict[str, Any]], currency: str | None) -> str:
    titles = [f"{c.title} ({visible(currency)})" if c.kind == "money" and currency else c.title
              for c in cols]
    cells = [[_cell(c, r) for c in cols] for r in rows]
    widths = [max([len(t), *(len(row[i]) for row in cells)]) for i, t in enumerate(titles)]
    left = [c.kind == "text" for c in cols]

    def line(values: list[str]) -> str:
        return " ".join(v.ljust(w) if lft else v.rjust(w)
                        for v, w, lft in zip(values, widths, left)).rstrip()

    if not rows:
        return line(titles) + "\n(none)"
    return "\n".join([line(titles), *(line(row) for row in cells)])


def _cell(col: Column, row: dict[str, Any]) -> str:
    value = row[col.key]
    if value is None:
        return NA
    if col.key == "job":
        name = (f"{INFERRED_MARK} " if row.get("inferred") else "") + visible(str(value))
        return name if len(name) <= JOB_WIDTH else name[:JOB_WIDTH - 1] + "…"
    if col.kind == "text":
        return visible(str(value))
    if col.kind == "count":
        return str(int(value))
    if col.kind == "hours":
        return f"{value:.2f}"
    if col.kind == "pct":
        return f"{value:.0f}%"
    if col.kind == "kwh":
        return f"{value:.3f}"
    if col.kind == "money":
        return f"{value:.2f}"
    if col.kind == "time":
        return _time(value)
    return mib(value)


def _time(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))


def _plain(col: Column, value: Any) -> Any:
    """The value as CSV and JSON carry it: rounded to what it means."""
    digits = _DIGITS.get(col.kind)
    return round(value, digits) if digits is not None and value is not None else value


def _fields(name: str, report: Report) -> list[Column]:
    return columns(TABLES[name], report.price is not None)


def _record(name: str, row: dict[str, Any], cols: list[Column]) -> dict[str, Any]:
    return {**{c.key: _plain(c, row[c.key]) for c in cols}, **{k: row[k] for k in _EXTRA[name]}}


def to_csv(report: Report) -> str:
    """Return the first of the report's tables as CSV, a header line of column keys first."""
    name = report.tables[0]
    cols = _fields(name, report)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.key for c in cols] + list(_EXTRA[name]))
    for row in report.rows[name]:
        rec = _record(name, row, cols)
        writer.writerow([_csv_cell(v) for v in rec.values()])
    return buf.getvalue()


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return " ".join(value)  # the nodes: names hold no space
    return value


def to_json(report: Report) -> str:
    """Return the report as one JSON document: what it covers, then each table's rows."""
    doc: dict[str, Any] = {
        "source": report.source, "nodes": list(report.hosts), "start": report.start,
        "end": report.end, "samples": report.samples, "price_per_kwh": report.price,
        "currency": report.currency}
    for name in report.tables:
        cols = _fields(name, report)
        doc[name] = [_record(name, row, cols) for row in report.rows[name]]
    return jsonout.dumps(doc, indent=2) + "\n"


FORMATS = {"text": text, "csv": to_csv, "json": to_json}
