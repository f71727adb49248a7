"""The bounds every vendor-tool backend keeps (amd-smi, rocm-smi, xpu-smi), through the real
subprocess path against each tool's fake on PATH: a hang, a flood of output and a death of the
first call are one line and leave no process behind; auto-detection tries the tool, and does not
name it where it is absent; a timeout setting out of range is refused before the tool runs; the
backend object's sample() never waits for the tool, which lists processes only while shown."""

from __future__ import annotations

import fnmatch
import json
import os
import time
from pathlib import Path

import pytest

from tests.support.peak_rss import peak_run
from tests.support.smi_tools import TOOLS, WITH_PROCESSES, Tool, left_running, run, wait_for


@pytest.mark.parametrize("tool", TOOLS)
def test_hang_is_bounded_with_one_line(tool: Tool, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tool.on_path(tmp_path, monkeypatch)
    fake.set([(tool.first, {"delay": 60, "file": tool.first_file})])
    started = time.monotonic()
    r = run("--backend", tool.name, "snapshot", env={tool.timeout_env: "1"})
    assert time.monotonic() - started < 15
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == (f"gputop: {tool.name} is present but unusable: `{tool.name} "
                        f"{tool.first_args}` did not answer within 1 s\n")
    assert wait_for(lambda: not left_running(fake))


@pytest.mark.parametrize("tool", TOOLS)
def test_printing_forever_is_stopped_with_one_line(tool: Tool, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tool.on_path(tmp_path, monkeypatch)
    fake.set([(tool.first, {"file": tool.first_file, "forever": True})])
    started = time.monotonic()
    code, peak_kib, stderr = peak_run("snapshot", "--backend", tool.name,
                                      env={tool.timeout_env: "60"})
    assert time.monotonic() - started < 30  # stopped at the cap, not at the timeout
    assert code == 1 and stderr.count("\n") == 0, stderr
    assert f"`{tool.name} {tool.first_args}` printed more than 4 MiB" in stderr
    assert peak_kib < 300 * 1024, f"peak RSS {peak_kib // 1024} MiB"
    assert not left_running(fake)


@pytest.mark.parametrize("tool", TOOLS)
def test_dying_is_one_line(tool: Tool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tool.on_path(tmp_path, monkeypatch)
    fake.set([(tool.first, {"rc": 1, "stderr": "simulated failure for the test\n"})])
    r = run("--backend", tool.name, "snapshot", "--json")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == (f"gputop: {tool.name} is present but unusable: `{tool.name} "
                        f"{tool.first_args}` exited with status 1: simulated failure for the "
                        "test\n")


@pytest.mark.parametrize("tool", TOOLS)
def test_auto_detection_tries_the_tool_where_nothing_else_answers(
        tool: Tool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool.on_path(tmp_path, monkeypatch).set(tool.answers)
    r = run("snapshot", "--json")
    if r.returncode == 0 and json.loads(r.stdout)["backend"] != tool.name:
        pytest.skip(f"this machine has a {json.loads(r.stdout)['backend']} device, tried first")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["backend"] == tool.name and r.stderr == ""


@pytest.mark.parametrize("tool", TOOLS)
def test_auto_detection_without_the_tool_is_one_line_that_does_not_name_it(tool: Tool) -> None:
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if not os.path.exists(os.path.join(p, tool.name)))
    r = run("snapshot", "--json", env={"PATH": path})
    if r.returncode == 0:  # a machine where a device answers
        assert json.loads(r.stdout)["backend"] != tool.name
        return
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1, r.stderr
    assert tool.name not in r.stderr


@pytest.mark.parametrize("tool", TOOLS)
def test_a_timeout_out_of_range_in_the_environment_is_one_line(
        tool: Tool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tool.on_path(tmp_path, monkeypatch)
    fake.set(tool.answers)
    r = run("--backend", tool.name, "snapshot", env={tool.timeout_env: "inf"})
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r.stderr
    assert f"{tool.timeout_env}: expected a number from 0.1 to 3600 s" in r.stderr
    assert fake.calls() == []  # refused before the tool runs


# ------------------------------------------------------------------ the backend object


@pytest.mark.parametrize("tool", TOOLS)
def test_the_round_open_reads_is_not_read_again_at_once(tool: Tool, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """open() takes the first readings (so the first sample has them); the worker's next round
    comes a refresh later, not straight after: a tool that takes a second or more a call was run
    twice back to back at every start."""
    fake = tool.on_path(tmp_path, monkeypatch)
    fake.set(tool.answers)
    backend = tool.open_backend(refresh_s=3600.0)
    try:
        assert backend.sample().devices[0].name == tool.first_name
        time.sleep(1.0)  # a second round, were one started, has run its fake by now
        assert sum(fnmatch.fnmatchcase(c, tool.readings) for c in fake.calls()) == 1
    finally:
        backend.close()


@pytest.mark.parametrize("tool", WITH_PROCESSES)
def test_a_hanging_round_never_blocks_open_or_sample(tool: Tool, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tool.on_path(tmp_path, monkeypatch)
    assert tool.processes is not None
    fake.set([(tool.first, {"file": tool.first_file}),
              (tool.readings, {"delay": 30}), (tool.processes, {"delay": 30})])
    started = time.monotonic()
    backend = tool.open_backend(timeout_s=0.5, refresh_s=0.1)
    try:
        assert time.monotonic() - started < 5  # the first round is bounded too
        t0 = time.monotonic()
        dev = backend.sample().devices[0]
        assert time.monotonic() - t0 < 0.1
        assert dev.status == "error" and f"`{tool.name} {tool.readings}` did not answer within " \
            "0.5 s" in (dev.status_reason or "")
        assert dev.name == tool.first_name  # what the first call said stays
    finally:
        t0 = time.monotonic()
        backend.close()
        assert time.monotonic() - t0 < 2.0  # close kills the call in flight
    assert wait_for(lambda: not left_running(fake))


@pytest.mark.parametrize("tool", WITH_PROCESSES)
def test_processes_are_read_only_while_a_consumer_shows_them(
        tool: Tool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tool.on_path(tmp_path, monkeypatch)
    fake.set(tool.answers)
    backend = tool.open_backend(refresh_s=0.05)
    try:
        backend.sample(wants={"utilization_gpu_pct": 0.0})
        reads = backend.reads
        assert wait_for(lambda: backend.reads >= reads + 2)
        assert fake.calls()[-1] == tool.readings  # no process call after that sample
        backend.sample()  # EVERYTHING: processes wanted again
        n = len(fake.calls())
        assert wait_for(lambda: tool.processes in fake.calls()[n:])
    finally:
        backend.close()
