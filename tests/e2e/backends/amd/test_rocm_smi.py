"""The rocm-smi backend through the real subprocess path, against a fake `rocm-smi` on PATH that
prints the real captures (tests/fixtures/amd), hangs, prints for ever or dies."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from gputop.backends.amd.rocm.backend import ARGS, RocmSmiBackend
from gputop.backends.base import BackendOptions
from tests.support.amd_smi import METRIC_PARTIAL, PROCESS_R9700, STATIC_MI300X, FakeAmdSmi
from tests.support.paths import ROOT, gputop_cmd
from tests.support.peak_rss import peak_run
from tests.support.procs import alive
from tests.support.rocm_smi import MI100, RX6700XT_612, FakeRocmSmi

CALL = "*--json"  # the fake's pattern for Telegraf's flags, as ARGS runs them


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(gputop_cmd(*args), capture_output=True, text=True, timeout=60,
                          cwd=ROOT, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def wait_for(cond, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def test_snapshot_json_of_six_mi100(fake_rocm_smi: FakeRocmSmi) -> None:
    fake_rocm_smi.set([(CALL, {"file": MI100})])
    r = run("--backend", "rocm-smi", "snapshot", "--json")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""  # the empty line before the JSON is no note
    assert fake_rocm_smi.calls()[0] == " ".join(ARGS)
    doc = json.loads(r.stdout)
    assert (doc["backend"], doc["driver_version"]) == ("rocm-smi", "6.2.4")
    devs = doc["devices"]
    assert [(d["index"], d["name"], d["vendor"], d["status"]) for d in devs] \
        == [(i, "Arcturus GL-XL [Instinct MI100]", "amd", "ok") for i in range(6)]
    d = devs[0]
    assert (d["pci_bus_id"], d["memory_total_mib"], d["memory_used_mib"]) \
        == ("0000:1e:00.0", 32752.0, 6.46875)
    assert (d["power_draw_w"], d["power_limit_w"], d["temperature_c"], d["clock_sm_mhz"]) \
        == (39.0, 290.0, 31.0, 300.0)
    assert (d["pcie_gen"], d["pcie_width"], d["fan_pct"], d["uuid"]) == (3, 16, None, None)
    assert devs[5]["pci_bus_id"] == "0000:49:00.0"


def test_text_before_the_json_is_skipped_and_said_once(fake_rocm_smi: FakeRocmSmi) -> None:
    fake_rocm_smi.set([(CALL, {"file": RX6700XT_612, "before": "WARNING: a line of text\n"})])
    r = run("--backend", "rocm-smi", "snapshot", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["devices"][0]["utilization_memory_pct"] == 0.0
    assert r.stderr.splitlines() == [
        "gputop: note: rocm-smi printed before its JSON: WARNING: a line of text"]


def test_hang_is_bounded_with_one_line(fake_rocm_smi: FakeRocmSmi) -> None:
    fake_rocm_smi.set([(CALL, {"delay": 60, "file": MI100})])
    started = time.monotonic()
    r = run("--backend", "rocm-smi", "snapshot", env={"GPUTOP_ROCM_SMI_TIMEOUT": "1"})
    assert time.monotonic() - started < 15
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(
        "gputop: rocm-smi is present but unusable: `rocm-smi -o -l")
    assert r.stderr.endswith("--json` did not answer within 1 s\n")
    assert wait_for(lambda: not [p for p in fake_rocm_smi.pids() if alive(p)])


def test_printing_forever_is_stopped_with_one_line(fake_rocm_smi: FakeRocmSmi) -> None:
    fake_rocm_smi.set([(CALL, {"file": MI100, "forever": True})])
    started = time.monotonic()
    code, peak_kib, stderr = peak_run("snapshot", "--backend", "rocm-smi",
                                      env={"GPUTOP_ROCM_SMI_TIMEOUT": "60"})
    assert time.monotonic() - started < 30  # stopped at the cap, not at the timeout
    assert code == 1 and stderr.count("\n") == 0, stderr
    assert "--json` printed more than 4 MiB" in stderr
    assert peak_kib < 300 * 1024, f"peak RSS {peak_kib // 1024} MiB"
    assert not [p for p in fake_rocm_smi.pids() if alive(p)]


def test_dying_is_one_line(fake_rocm_smi: FakeRocmSmi) -> None:
    fake_rocm_smi.set([(CALL, {"rc": 1, "stderr": "simulated failure for the test\n"})])
    r = run("--backend", "rocm-smi", "snapshot", "--json")
    assert r.returncode == 1 and r.stdout == "" and r.stderr.count("\n") == 1
    assert r.stderr.endswith("--json` exited with status 1: simulated failure for the test\n")


def test_auto_detection_tries_rocm_smi_where_nothing_else_answers(
        fake_rocm_smi: FakeRocmSmi) -> None:
    fake_rocm_smi.set([(CALL, {"file": MI100})])
    r = run("snapshot", "--json")
    if r.returncode == 0 and json.loads(r.stdout)["backend"] != "rocm-smi":
        pytest.skip(f"this machine has a {json.loads(r.stdout)['backend']} device, tried first")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["backend"] == "rocm-smi" and r.stderr == ""


def test_auto_detection_without_rocm_smi_does_not_name_it() -> None:
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if not os.path.exists(os.path.join(p, "rocm-smi")))
    r = run("snapshot", "--json", env={"PATH": path})
    if r.returncode == 0:  # a machine where a device answers
        assert json.loads(r.stdout)["backend"] != "rocm-smi"
        return
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1, r.stderr
    assert "rocm-smi" not in r.stderr


def test_a_hanging_call_never_blocks_sample(fake_rocm_smi: FakeRocmSmi) -> None:
    fake_rocm_smi.set([(CALL, {"file": MI100})])
    backend = RocmSmiBackend(BackendOptions(), timeout_s=0.5, refresh_s=0.05)
    backend.open()
    try:
        reads = backend.reads
        fake_rocm_smi.set([(CALL, {"delay": 30})])
        assert wait_for(lambda: backend.sample().devices[0].status == "error")
        t0 = time.monotonic()
        dev = backend.sample().devices[0]
        assert time.monotonic() - t0 < 0.1
        assert "did not answer within 0.5 s" in dev.status_reason and backend.reads > reads
        assert (dev.name, dev.power_draw_w) == ("Arcturus GL-XL [Instinct MI100]", 39.0)
    finally:
        t0 = time.monotonic()
        backend.close()
        assert time.monotonic() - t0 < 2.0  # close kills the call in flight
    assert wait_for(lambda: not [p for p in fake_rocm_smi.pids() if alive(p)])


def test_a_timeout_out_of_range_in_the_environment_is_one_line(
        fake_rocm_smi: FakeRocmSmi) -> None:
    fake_rocm_smi.set([(CALL, {"file": MI100})])
    r = run("--backend", "rocm-smi", "snapshot", env={"GPUTOP_ROCM_SMI_TIMEOUT": "inf"})
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r.stderr
    assert "GPUTOP_ROCM_SMI_TIMEOUT: expected a number from 0.1 to 3600 s" in r.stderr
    assert fake_rocm_smi.calls() == []  # refused before rocm-smi runs


def test_auto_never_runs_rocm_smi_beside_amd_smi(fake_rocm_smi: FakeRocmSmi,
                                                 fake_amd_smi: FakeAmdSmi) -> None:
    """Both tools read the same GPUs: where amd-smi answered, rocm-smi is not run."""
    fake_rocm_smi.set([(CALL, {"file": MI100})])
    fake_amd_smi.set([("static --json", {"file": STATIC_MI300X}),
                      ("metric --json", {"file": METRIC_PARTIAL}),
                      ("process --json", {"file": PROCESS_R9700})])
    r = run("snapshot", "--json")
    if r.returncode == 0 and not json.loads(r.stdout)["backend"].startswith("amd-smi"):
        pytest.skip(f"this machine has a {json.loads(r.stdout)['backend']} device, tried first")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["backend"] == "amd-smi"
    # the two fakes share their folder's call log: amd-smi's calls are there, rocm-smi's not
    assert " ".join(ARGS) not in fake_rocm_smi.calls()


def test_the_tool_is_not_run_while_no_consumer_wants_what_it_prints(
        fake_rocm_smi: FakeRocmSmi) -> None:
    fake_rocm_smi.set([(CALL, {"file": MI100})])
    backend = RocmSmiBackend(BackendOptions(), refresh_s=0.05)
    backend.open()
    try:
        assert wait_for(lambda: len(fake_rocm_smi.calls()) >= 2)  # the worker re-runs it
        backend.sample(wants={"processes": 0.0})  # nothing rocm-smi's readings fill
        time.sleep(0.3)  # the round in flight, if any, ends
        n = len(fake_rocm_smi.calls())
        time.sleep(0.5)
        assert len(fake_rocm_smi.calls()) == n
        backend.sample()  # EVERYTHING: wanted again
        assert wait_for(lambda: len(fake_rocm_smi.calls()) > n)
    finally:
        backend.close()
