"""The report written out (gputop.report.render): N/A stays N/A in every format, names are shown
harmlessly."""

from __future__ import annotations

import csv
import io
import json

from gputop.report.render import JOB_WIDTH, Report, text, to_csv, to_json
from gputop.report.rows import job_rows, user_rows

REC = {"job": "python \x1b[31mserve.py " + "x" * 60, "inferred": True, "hpc_job": None,
       "user": "bob", "users": ["bob"], "gpus": ["GPU-0"], "first_seen": 0.0,
       "last_seen": 3600.0, "started": None, "gpu_s": 3600.0, "idle_gpu_s": 1800.0,
       "energy_j": None, "idle_energy_j": None, "sm_active_pct": None,
       "peak_memory_mib": 2048.0, "nodes": ["n1"]}


def report(price=None, tables=("jobs", "users")) -> Report:
    return Report(source="a.ndjson", hosts=["n1"], start=0.0, end=3600.0, samples=2,
                  rows={"jobs": job_rows([REC], price), "users": user_rows([REC], price)},
                  tables=tables, price=price)


def test_what_no_source_reported_is_na_empty_and_null_never_zero():
    out = text(report(price=0.3)).splitlines()
    header, row = out[3], out[4]
    assert header.endswith("GPU-H IDLE GPU-H IDLE% KWH IDLE KWH COST SM% PEAK MEM")
    # kWh, idle kWh, cost and SM activity: not reported
    assert row.split()[-8:] == ["1.00", "0.50", "50%", "N/A", "N/A", "N/A", "N/A", "2048MiB"]
    (rec,) = csv.DictReader(io.StringIO(to_csv(report(price=0.3))))
    assert (rec["kwh"], rec["cost"], rec["sm_pct"], rec["gpu_h"]) == ("", "", "", "1.0")
    doc = json.loads(to_json(report(price=0.3)))
    assert (doc["jobs"][0]["kwh"], doc["jobs"][0]["cost"], doc["users"][0]["sm_pct"]) == \
        (None, None, None)


def test_a_name_is_shown_harmlessly_and_cut_to_its_column():
    (row,) = [line for line in text(report()).splitlines() if line.startswith("≈ python")]
    assert "\x1b" not in row and "^[" in row  # made visible, never obeyed
    assert row[:JOB_WIDTH].endswith("…") and row[JOB_WIDTH:].startswith(" bob ")
    # CSV and JSON carry it whole, as JSON and CSV quote
    assert json.loads(to_json(report()))["jobs"][0]["job"] == REC["job"]


def test_no_rows_say_none():
    empty = Report(source="p", hosts=[], start=None, end=None, samples=None,
                   rows={"jobs": [], "users": []})
    lines = text(empty).splitlines()
    assert lines[0] == "gputop report of p: no node" and lines[4] == "(none)"
