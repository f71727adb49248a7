"""The rocm-smi backend through the real subprocess path, against a fake `rocm-smi` on PATH that
prints the real captures (tests/fixtures/amd); its hang, flood and death are checked with the
other tools' in tests/e2e/backends/test_smi_tools.py."""

from __future__ import annotations

import json
import time

import pytest

from gputop.backends.amd.rocm.backend import ARGS, RocmSmiBackend
from gputop.backends.base import BackendOptions
from tests.support.amd_smi import FakeAmdSmi
from tests.support.rocm_smi import CALL, MI100, RX6700XT_612, FakeRocmSmi
from tests.support.smi_tools import AMD_SMI, left_running, run, wait_for


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
    assert wait_for(lambda: not left_running(fake_rocm_smi))


def test_auto_never_runs_rocm_smi_beside_amd_smi(fake_rocm_smi: FakeRocmSmi,
                                                 fake_amd_smi: FakeAmdSmi) -> None:
    """Both tools read the same GPUs: where amd-smi answered, rocm-smi is not run."""
    fake_rocm_smi.set([(CALL, {"file": MI100})])
    fake_amd_smi.set(AMD_SMI.answers)
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
