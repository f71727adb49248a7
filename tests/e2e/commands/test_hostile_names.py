"""Hostile names stay text, from real processes on the C fake of NVML (tests/support/cfake.py) to every
output a terminal or a script reads: ``gputop snapshot`` (text and ``--json``),
``--query-compute-apps`` CSV and the exporter's ``/metrics`` (checked by ``promtool``).

The processes (tests/support/hostile.py) choose their own ``argv[0]`` and ``comm``: every terminal
attack of issue 24, a newline that spells a forged CSV row, bytes that are not UTF-8, a comma
and a double quote, next to one ordinary ``sleep`` whose output must stay byte for byte."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys

import pytest

from tests.support import cfake, hostile
from tests.support.paths import ROOT
from tests.support.prom_harness import find, start_exporter, stop


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    why = cfake.available()
    if why is not None:
        pytest.fail(why)
    folder = cfake.build(tmp_path_factory.mktemp("fakenvml"))
    with hostile.Hostiles() as procs:
        config = procs.nvml_config(folder / "hostile.conf")
        env = {"LD_LIBRARY_PATH": str(folder), "FAKENVML_CONFIG": str(config)}
        yield procs, env


def gputop(env: dict[str, str], *args: str) -> bytes:
    out = subprocess.run([sys.executable, "-m", "gputop", "--backend", "nvml", *args],
                         cwd=ROOT, env={**os.environ, **env}, capture_output=True, timeout=60)
    assert out.returncode == 0 and out.stderr == b"", out.stderr.decode(errors="replace")
    return out.stdout


def test_snapshot_text_shows_every_name_made_visible(node):
    procs, env = node
    out = gputop(env, "snapshot", "--color", "never").decode("utf-8")  # strict: valid UTF-8
    assert hostile.inert(out), repr(out)
    # the text view names a process by its comm: ESC, the raw C1 byte (not UTF-8), BEL, RLO
    assert f"^[[2J\ufffd^G\\u202eX/{procs.pids['escapes']}(" in out
    assert f":sleep/{procs.pids['plain']}(1024M)" in out


def test_snapshot_json_is_valid_utf8_and_keeps_the_names_as_they_are(node):
    procs, env = node
    raw = gputop(env, "snapshot", "--json")
    assert not re.search(rb"\\ud[89a-f][0-9a-f]{2}", raw)  # no surrogate, lone or paired
    doc = json.loads(raw.decode("utf-8"))
    by_pid = {p["pid"]: p for d in doc["devices"] for p in d["processes"]}
    # JSON escapes controls itself: a script gets the command line as the process wrote it
    assert by_pid[procs.pids["escapes"]]["command"].startswith(hostile.ARGV0 + " -c ")
    assert by_pid[procs.pids["newline"]]["command"] == hostile.NEWLINE_ARGV0 + " 3600"
    # bytes that are not UTF-8 are U+FFFD, never lone surrogates strict parsers refuse
    assert by_pid[procs.pids["bad-utf8"]]["command"] == "BAD\ufffd\ufffd 3600"
    assert by_pid[procs.pids["escapes"]]["name"] == "\x1b[2J\ufffd\x07\u202eX"


def test_query_compute_apps_csv_gets_one_row_of_three_cells_per_process(node):
    procs, env = node
    out = gputop(env, "--query-compute-apps=pid,process_name,used_memory",
                 "--format=csv").decode("utf-8")
    assert hostile.inert(out), repr(out)
    lines = out.split("\n")
    assert lines[0] == "pid, process_name, used_gpu_memory [MiB]" and lines[-1] == ""
    rows = lines[1:-1]
    assert len(rows) == len(procs.pids)  # the newline added no row
    assert all(len(r.split(", ")) == 3 for r in rows)  # nor a comma a column, split naively
    parsed = list(csv.reader(out.splitlines()[1:], skipinitialspace=True))
    assert [len(r) for r in parsed] == [3] * len(procs.pids)  # nor for a CSV reader
    assert sorted(int(r[0]) for r in parsed) == sorted(procs.pids.values())
    names = {int(r[0]): r[1] for r in parsed}
    assert f"{procs.pids['plain']}, sleep, 1024 MiB" in rows  # ordinary names: byte for byte
    assert names[procs.pids["newline"]] == r"/usr/bin/x^J31337\x2c/usr/bin/forged\x2c99999\x2c"
    assert names[procs.pids["comma"]] == r"/opt/a\x2cb\x22c"
    assert names[procs.pids["bad-utf8"]] == "BAD\ufffd\ufffd"
    assert names[procs.pids["escapes"]] == (
        r"/opt/^[]0;pwned^G^[[2J^[]52;c;ZXZpbA==^G^[]8;;http://evil.example/^[\click^[]8;;^[\^[[6n"
        r"^G\x9b31m\u202egpj.exe[@click=app.quit]quit[/]")


def test_the_agent_stream_the_cluster_view_reads_is_json_a_strict_parser_reads(node):
    procs, env = node
    raw = gputop(env, "agent", "--count", "1", "--ignore-stdin")
    hello, snapshot = raw.decode("ascii").splitlines()  # ensure_ascii: every byte ASCII
    assert json.loads(hello)["hello"]
    assert not re.search(r"\\ud[89a-f][0-9a-f]{2}", snapshot)
    by_pid = {p["pid"]: p for d in json.loads(snapshot)["devices"] for p in d["processes"]}
    assert by_pid[procs.pids["bad-utf8"]]["command"] == "BAD\ufffd\ufffd 3600"
    assert by_pid[procs.pids["escapes"]]["command"].startswith(hostile.ARGV0)


def test_the_exporter_writes_no_control_character_and_promtool_reads_it(node, monkeypatch):
    from prometheus_client.parser import text_string_to_metric_families

    procs, env = node
    for key, value in env.items():  # the exporter's process inherits the fake NVML
        monkeypatch.setenv(key, value)
    exporter = start_exporter("--backend", "nvml")
    try:
        body = exporter.metrics()  # decoded strictly as UTF-8
    finally:
        stop(exporter.proc)
    assert hostile.inert(body), [line for line in body.split("\n") if not line.isprintable()]
    names = {s.labels["pid"]: s.labels["name"]
             for family in text_string_to_metric_families(body) for s in family.samples
             if s.name == "gputop_process_gpu_memory_bytes"}
    assert names[str(procs.pids["escapes"])] == "^[[2J\ufffd^G\\u202eX"
    assert names[str(procs.pids["plain"])] == "sleep"
    out = subprocess.run([find("promtool"), "check", "metrics"], input=body.encode(),
                         capture_output=True, timeout=30)
    assert out.returncode in (0, 3), out.stdout + out.stderr  # 3: lint remarks, no parse error
