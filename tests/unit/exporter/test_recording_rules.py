"""The recording rules `gputop exporter --recording-rules` writes for the report: a copy of
each family the report reads over a range, under the name it reads it by."""

from __future__ import annotations

import yaml

from gputop.commands import main
from gputop.exporter import own
from gputop.exporter.recording_rules import recording_rules
from gputop.report import prometheus as report_source


def test_each_family_the_report_reads_between_the_edges_is_copied_hourly():
    [group] = yaml.safe_load(recording_rules())["groups"]
    assert group["interval"] == "3600s"
    assert {r["record"]: r["expr"] for r in group["rules"]} == {
        own.copy_of(f): f for f in own.COPIED}
    # the report's queries read a copy of every family they read across the range
    asked = "\n".join([*report_source.queries(0.0, 7 * 86400.0, copies=True).values(),
                       report_source.recheck_query(0.0, 7 * 86400.0, copies=True)])
    read = {f for f in own.COPIED if own.copy_of(f) + "[" in asked}
    assert read == set(own.COPIED)


def test_a_copy_is_named_as_prometheus_names_recording_rules():
    assert own.copy_of(own.JOB_GPU_SECONDS) == "gputop:job_gpu_seconds_total:hourly"


def test_the_command_writes_the_file_or_says_in_one_line_why_not(tmp_path, capsys):
    out = tmp_path / "report.rules.yml"
    assert main.main(["exporter", "--recording-rules", str(out)]) == 0
    assert out.read_text() == recording_rules()
    assert main.main(["exporter", "--recording-rules"]) == 0
    assert capsys.readouterr().out == recording_rules()
    assert main.main(["exporter", "--recording-rules", str(tmp_path / "no" / "such")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--recording-rules" in err and "No such file" in err
