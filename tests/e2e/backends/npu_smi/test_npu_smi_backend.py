"""The npu-smi backend through the real subprocess path, against a fake `npu-smi` on PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gputop.backends.base import BackendOptions, BackendUnavailable
from gputop.backends.npu_smi.backend import NpuSmiBackend
from gputop.backends.npu_smi.runner import Runner, find_npu_smi
from gputop.backends.smi_runner import SmiExitError, SmiTimeout
from gputop.sampler import Sampler
from tests.support.npu_smi import FakeNpuSmi
from tests.support.npu_smi_expected import T_310B4, T_910A_WARN, T_910B1, T_910B4, T_950, TABLES
from tests.support.paths import ROOT


def wait_for(cond, timeout: float = 5.0, step: float = 0.02) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def run_gputop(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gputop", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
        env={**os.environ, **(env or {})},
    )


# ------------------------------------------------------------------ the CLI, every table


@pytest.mark.parametrize("name", sorted(TABLES))
def test_snapshot_json_with_fake_npu_smi(fake_npu_smi: FakeNpuSmi, name: str) -> None:
    fake_npu_smi.set([("info", {"file": name})])
    proc = run_gputop("snapshot", "--json", "--backend", "npu-smi")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    want = TABLES[name]
    assert doc["backend"] == "npu-smi"
    assert doc["driver_version"] == want["version"]
    got = [
        (d["index"], d["npu_id"], d["chip_id"], d["name"], d["power_draw_w"], d["temperature_c"],
         d["utilization_gpu_pct"], d["memory_used_mib"], d["memory_total_mib"], d["pci_bus_id"])
        for d in doc["devices"]
    ]
    assert got == [(w[0], w[1], w[2], w[3], w[5], w[6], w[7], w[8], w[9], w[10])
                   for w in want["chips"]]
    assert all(d["vendor"] == "huawei" and d["data_age_s"] is not None for d in doc["devices"])
    procs = [(d["index"], p["pid"], p["name"], p["gpu_memory_mib"])
             for d in doc["devices"] for p in d["processes"]]
    assert procs == [(i, pid, n, m) for i, pid, n, m in want["processes"]]
    unhealthy = [d["index"] for d in doc["devices"] if d["status_reason"]]
    assert unhealthy == [w[0] for w in want["chips"] if w[4] != "OK"]
    assert [h["device"] for h in doc["hints"] if h["code"] == "device-unhealthy"] == unhealthy


def test_snapshot_text_with_fake_npu_smi(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"file": T_910A_WARN})])
    proc = run_gputop("snapshot", "--backend", "npu-smi", "--color", "never")
    assert proc.returncode == 0, proc.stderr
    assert "Ascend xxx" in proc.stdout and "hlt_host_devmm_" in proc.stdout


def test_npu_smi_option_names_the_executable(fake_npu_smi: FakeNpuSmi, tmp_path: Path) -> None:
    fake_npu_smi.set([("info", {"file": T_950})])
    env = {"PATH": "/usr/bin:/bin"}  # not on PATH any more: only --npu-smi finds it
    proc = run_gputop("snapshot", "--json", "--backend", "npu-smi",
                      "--npu-smi", str(fake_npu_smi.path), env=env)
    assert proc.returncode == 0, proc.stderr
    assert [d["name"] for d in json.loads(proc.stdout)["devices"]] == ["Ascend xxx"]
    proc = run_gputop("snapshot", "--backend", "npu-smi", "--npu-smi", str(tmp_path / "nope"))
    assert proc.returncode != 0
    assert proc.stderr.startswith("gputop: npu-smi: ") and "Traceback" not in proc.stderr


def test_cli_nonzero_exit_is_one_clear_line(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"rc": 1, "stderr": "simulated failure for the test\n"})])
    proc = run_gputop("snapshot", "--backend", "npu-smi")
    assert proc.returncode == 1
    assert proc.stderr == ("gputop: npu-smi is present but unusable: `npu-smi info` exited with "
                           "status 1: simulated failure for the test\n")


def test_cli_garbage_names_the_line(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"stdout": "+----+\nsegmentation fault?\n"})])
    proc = run_gputop("snapshot", "--json", "--backend", "npu-smi")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "line 2" in proc.stderr and "segmentation fault?" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_cli_hang_past_the_timeout(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"delay": 60, "file": T_950})])
    started = time.monotonic()
    proc = run_gputop("snapshot", "--backend", "npu-smi", env={"GPUTOP_NPU_SMI_TIMEOUT": "1"})
    assert time.monotonic() - started < 15
    assert proc.returncode == 1
    assert "`npu-smi info` did not answer within 1 s" in proc.stderr


def test_auto_detect_picks_npu_smi_without_a_simulator_warning(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"file": T_950})])
    proc = run_gputop("snapshot", "--color", "never")
    assert proc.returncode == 0, proc.stderr
    assert "backend: npu-smi" in proc.stdout and "Ascend xxx" in proc.stdout
    assert proc.stderr == ""


def test_auto_detect_never_simulates_when_npu_smi_fails(fake_npu_smi: FakeNpuSmi) -> None:
    """No silent simulation: a failing npu-smi (and no NVML) is one line naming both, with
    nvidia-smi's exit code for the missing NVML library."""
    fake_npu_smi.set([("info", {"rc": 3})])
    proc = run_gputop("snapshot", "--json")
    if proc.returncode == 0:  # a machine where NVML answers
        assert json.loads(proc.stdout)["backend"] == "nvml"
        return
    assert proc.returncode == 12 and proc.stdout == "", proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "npu-smi" in proc.stderr


# ------------------------------------------------------------------ the backend object


def open_backend(**kw) -> NpuSmiBackend:
    backend = NpuSmiBackend(BackendOptions(), **kw)
    backend.open()
    return backend


def test_slow_npu_smi_never_blocks_sample(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"file": T_910B4})])
    backend = open_backend(refresh_s=0.2, enrich_s=600)
    try:
        fake_npu_smi.set([("info", {"file": T_910B4, "delay": 5.0})])
        worst, oldest, refreshed = 0.0, 0.0, False
        deadline = time.monotonic() + 10
        while not refreshed:
            assert time.monotonic() < deadline, "the 5 s answer never arrived"
            t0 = time.monotonic()
            snap = backend.sample()
            worst = max(worst, time.monotonic() - t0)
            age = snap.devices[0].data_age_s
            oldest = max(oldest, age)
            refreshed = oldest > 4.0 and age < 1.0  # the slow answer arrived and was taken
            assert len(snap.devices) == 8 and snap.devices[0].power_draw_w == 87.2
            assert all(d.status == "ok" and d.status_reason is None for d in snap.devices)
            time.sleep(0.05)
        # Readings came at once while npu-smi took 5 s to answer, and showed their age.
        assert worst < 0.1, worst
    finally:
        t0 = time.monotonic()
        backend.close()
        assert time.monotonic() - t0 < 1.0  # close kills the query in flight


def test_hang_keeps_last_values_and_reports_the_timeout(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"file": T_950})])
    backend = open_backend(refresh_s=0.1, enrich_s=600, timeout_s=0.7)
    try:
        fake_npu_smi.set([("info", {"file": T_950, "delay": 30})])
        assert wait_for(lambda: backend.sample().devices[0].status_reason is not None, 5)
        dev = backend.sample().devices[0]
        assert "did not answer within 0.7 s" in dev.status_reason
        assert dev.power_draw_w == 204.4 and dev.memory_used_mib == 4439  # last good values
        assert dev.status == "error"  # from the sample that knows the read failed, not later
        assert dev.data_age_s >= 0.7  # and how old the readings it still carries are
        # npu-smi recovers: fresh values, no complaint.
        fake_npu_smi.set([("info", {"file": T_950})])
        assert wait_for(lambda: backend.sample().devices[0].status_reason is None, 5)
        assert backend.sample().devices[0].status == "ok"
    finally:
        backend.close()


def test_open_fails_cleanly(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"stdout": "\x00\x01garbage\n"})])
    with pytest.raises(BackendUnavailable, match="line 1"):
        open_backend()
    fake_npu_smi.set([("info", {"delay": 30})])
    t0 = time.monotonic()
    with pytest.raises(BackendUnavailable, match="did not answer within 0.5 s"):
        open_backend(timeout_s=0.5)
    assert time.monotonic() - t0 < 3


def test_runner_typed_errors(fake_npu_smi: FakeNpuSmi) -> None:
    runner = Runner(find_npu_smi(None), timeout_s=0.5)
    fake_npu_smi.set([("info", {"rc": 2, "stdout": "first line\nsecond\n"})])
    with pytest.raises(SmiExitError) as err:
        runner.run("info")
    assert err.value.returncode == 2 and "first line" in str(err.value)
    fake_npu_smi.set([("info", {"delay": 30})])
    with pytest.raises(SmiTimeout):
        runner.run("info")


def test_enrichment_950_without_chip_option(fake_npu_smi: FakeNpuSmi) -> None:
    doc = "_Ascend950_official-doc-example.txt"
    fake_npu_smi.set([
        ("info", {"file": T_950}),
        ("info -h", {"file": "info-h" + doc}),
        ("info -t usages -i 0", {"file": "info-t-usages-i0" + doc}),
        ("info -t common -i 0", {"file": "info-t-common-i0" + doc}),
        ("info -t memory -i 0", {"file": "info-t-memory-i0" + doc}),
        ("info -t board -i 0", {"file": "info-t-board-i0" + doc}),
    ])
    backend = open_backend(enrich_s=600, enrich_gap_s=0.0)
    try:
        assert wait_for(lambda: backend.sample().devices[0].serial is not None)
        dev = backend.sample().devices[0]
        assert (dev.clock_sm_mhz, dev.clock_sm_max_mhz, dev.clock_mem_mhz) == (100, 1650, 3200)
        assert dev.utilization_memory_pct == 3 and dev.temperature_memory_c == 63
        assert dev.power_draw_w == 204.4  # the table's reading stays
        calls = fake_npu_smi.calls()
        assert "info -t usages -i 0" in calls and not any("-c" in c for c in calls)
        assert not any("-t health" in c for c in calls)  # health is OK: nothing to ask
    finally:
        backend.close()


def test_enrichment_failures_never_lose_the_table(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([
        ("info", {"file": T_910B1}),
        ("info -h", {"file": "info-h_npu-smi-23.0.rc2_910B1.txt"}),
        ("info -t usages -i 0 -c 0", {"file": "info-t-usages-i0_910B1_npu-smi-23.0.rc2.txt"}),
        ("info -t common *", {"stdout": "garbage without colons\n"}),
        ("info -t *", {"rc": 1, "stderr": "simulated failure\n"}),
    ])
    backend = open_backend(enrich_s=0.05, enrich_gap_s=0.0)
    try:
        # Six rounds of enrichment queries, all but one of them failing.
        assert wait_for(lambda: fake_npu_smi.calls().count("info -t usages -i 0 -c 0") >= 6, 15)
        snap = backend.sample()
        assert [d.power_draw_w for d in snap.devices] == [88.4, 92.1, 92.7]
        assert [d.memory_used_mib for d in snap.devices] == [4175, 4175, 4174]
        assert snap.devices[0].utilization_memory_pct == 0  # usages -i 0 -c 0 did answer
        assert all(d.status_reason is None for d in snap.devices)
        calls = fake_npu_smi.calls()
        assert "info -t usages -i 7 -c 0" in calls
        # A query that keeps failing is dropped after three tries; the one that works is not.
        assert calls.count("info -t common -i 1 -c 0") == 3
        assert calls.count("info -t usages -i 0 -c 0") >= 6
    finally:
        backend.close()


def test_health_detail_is_asked_only_for_unhealthy_chips(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"file": T_910A_WARN})])
    backend = open_backend(enrich_s=600, enrich_gap_s=0.0)
    try:
        assert wait_for(lambda: "info -t health -i 7 -c 0" in fake_npu_smi.calls())
        health = [c for c in fake_npu_smi.calls() if "-t health" in c]
        assert sorted(set(health)) == ["info -t health -i 3 -c 0", "info -t health -i 7 -c 0"]
    finally:
        backend.close()


def test_chip_that_vanishes_is_lost(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"file": T_910B4})])
    backend = open_backend(refresh_s=0.05, enrich_s=600)
    try:
        fake_npu_smi.set([("info", {"file": T_910B1})])  # lists NPUs 0, 1 and 7 only
        assert wait_for(lambda: backend.sample().devices[2].status == "lost")
        snap = backend.sample()
        assert [d.status for d in snap.devices] == ["ok", "ok"] + ["lost"] * 5 + ["ok"]
        assert snap.devices[7].name == "Ascend 910B1"
        assert snap.devices[3].memory_used_mib is None and snap.devices[3].npu_id == 3
    finally:
        backend.close()


def test_sample_filters_devices_and_info_is_static(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"file": T_910B4})])
    backend = open_backend(enrich_s=600)
    try:
        info = backend.info()
        assert [d.index for d in info.devices] == list(range(8))
        assert info.devices[0].memory_total_mib == 32768 and info.driver_version == "25.0.rc1.1"
        snap = backend.sample([2, 5])
        assert [d.index for d in snap.devices] == [2, 5]
    finally:
        backend.close()


def test_sampler_keeps_the_backend_health_hint(fake_npu_smi: FakeNpuSmi) -> None:
    fake_npu_smi.set([("info", {"file": T_310B4})])
    backend = open_backend(enrich_s=600)
    try:
        sampler = Sampler(backend, analyze=lambda history: [])
        snap = sampler.tick()
        assert [(h.device, h.code, h.severity) for h in snap.hints] == [
            (0, "device-unhealthy", "critical")]
    finally:
        backend.close()
