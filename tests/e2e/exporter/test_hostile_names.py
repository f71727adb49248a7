"""Hostile names stay text, from real processes on the C fake of NVML (tests/support/cfake.py) to every
output a terminal or a script reads: ``gputop snapshot`` (text and ``--json``),
``--query-compute-apps`` CSV and the exporter's ``/metrics`` (checked by ``promtool``).

The processes (tests/support/hostile.py) choose their own ``argv[0]`` and ``comm``: every terminal
attack of issue 24, a newline that spells a forged CSV row, bytes that are not UTF-8, a comma
and a double quote, next to one ordinary ``sleep`` whose output must stay byte for byte."""

from __future__ import annotations

import os
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
