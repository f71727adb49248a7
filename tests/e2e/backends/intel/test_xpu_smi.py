"""The xpu-smi backend through the real subprocess path, against a fake `xpu-smi` on PATH that
prints the real captures (tests/fixtures/intel, from their second line: the first is the
command); its hang, flood and death are checked with the other tools' in
tests/e2e/backends/test_smi_tools.py.

The A310 node (beszel PR 755) is captured whole enough: `discovery --dump 1,2,6,16` and `dump -m
1,2,5,18` of the same card. gputop asks for more ids than those captures hold (see
gputop/backends/intel/xpu/mapping.py); the fake answers with the capture, so the columns it lacks
are None. `ps` is the user guide's (devices 0 and 1)."""

from __future__ import annotations

import json

import pytest

from gputop.backends.base import BackendUnavailable
from tests.support.smi_tools import XPU_SMI, run
from tests.support.xpu_smi import (
    DISCOVERY,
    DISCOVERY_A310,
    DISCOVERY_FLEX,
    DUMP,
    DUMP_FLEX_BLANK,
    PS,
    FakeXpuSmi,
)


def a310(fake: FakeXpuSmi) -> None:
    fake.set(XPU_SMI.answers)


def test_snapshot_json_of_the_a310(fake_xpu_smi: FakeXpuSmi) -> None:
    a310(fake_xpu_smi)
    r = run("--backend", "xpu-smi", "snapshot", "--json")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""  # every cell the A310 printed has a value: nothing to note
    doc = json.loads(r.stdout)
    assert (doc["backend"], doc["driver_version"]) == ("xpu-smi", None)
    [dev] = doc["devices"]
    assert (dev["index"], dev["name"], dev["vendor"], dev["status"]) \
        == (0, "Intel(R) Arc(TM) A310 LP Graphics", "intel", "ok")
    assert (dev["power_draw_w"], dev["clock_sm_mhz"], dev["memory_used_mib"]) \
        == (15.36, 2450.0, 82.44)  # the last of the capture's 4 rows
    assert dev["clock_sm_max_mhz"] == 2450.0  # "Core Clock Rate"
    # "N/A" memory size, and what the capture was not asked for: N/A, never 0
    assert (dev["memory_total_mib"], dev["utilization_gpu_pct"], dev["temperature_c"]) \
        == (None, None, None)
    # `ps` lists PID 12961 under devices 0 and 1: this node has device 0 alone
    assert [(p["pid"], p["gpu_memory_mib"]) for p in dev["processes"]] == [(12961, 1966 / 1024)]
    assert fake_xpu_smi.calls()[:3] == [DISCOVERY, DUMP, "ps"]


def test_blank_cells_are_none_and_said_once(fake_xpu_smi: FakeXpuSmi) -> None:
    fake_xpu_smi.set([(DISCOVERY, {"file": DISCOVERY_FLEX}), (DUMP, {"file": DUMP_FLEX_BLANK}),
                      ("ps", {"file": PS})])
    r = run("--backend", "xpu-smi", "snapshot", "--json")
    assert r.returncode == 0, r.stderr
    devs = json.loads(r.stdout)["devices"]
    assert (devs[0]["utilization_gpu_pct"], devs[0]["temperature_c"]) == (None, None)
    assert (devs[0]["power_draw_w"], devs[0]["status"]) == (43.70, "ok")
    # the Flex 170 capture has rows of device 0 alone
    assert (devs[1]["status"], devs[1]["status_reason"]) \
        == ("lost", "no row of its own in `xpu-smi dump`")
    assert r.stderr.splitlines() == [
        "gputop: note: xpu-smi printed no value (blank or N/A) for GPU Utilization (%) of "
        "device(s) 0: shown as N/A, not 0",
        "gputop: note: xpu-smi printed no value (blank or N/A) for GPU Core Temperature (Celsius "
        "Degree) of device(s) 0: shown as N/A, not 0"]


def test_a_dump_that_dies_after_discovery_is_the_gpus_status(fake_xpu_smi: FakeXpuSmi) -> None:
    fake_xpu_smi.set([(DISCOVERY, {"file": DISCOVERY_A310}),
                      (DUMP, {"rc": 1, "stderr": "simulated failure for the test\n"}),
                      ("ps", {"file": PS})])
    r = run("--backend", "xpu-smi", "snapshot", "--json")
    assert r.returncode == 0, r.stderr
    [dev] = json.loads(r.stdout)["devices"]
    assert (dev["status"], dev["status_reason"]) == (
        "error", f"xpu-smi's last read failed (`xpu-smi {DUMP}` exited with status 1: simulated "
                 "failure for the test); no reading yet")
    assert dev["power_draw_w"] is None and dev["name"] == "Intel(R) Arc(TM) A310 LP Graphics"


# ------------------------------------------------------------------ the backend object


def test_an_answer_that_is_not_the_csv_is_unavailable(fake_xpu_smi: FakeXpuSmi) -> None:
    fake_xpu_smi.set([(DISCOVERY, {})])  # exits 0 having printed nothing
    with pytest.raises(BackendUnavailable, match=r"^xpu-smi is present but unusable: "
                       rf"`xpu-smi {DISCOVERY}` printed no 'Device ID' header$"):
        XPU_SMI.open_backend()
