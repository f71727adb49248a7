"""The xpu-smi backend through the real subprocess path, against a fake `xpu-smi` on PATH that
prints the real captures (tests/fixtures/intel, from their second line: the first is the
command), hangs, prints for ever or dies.

The A310 node (beszel PR 755) is captured whole enough: `discovery --dump 1,2,6,16` and `dump -m
1,2,5,18` of the same card. gputop asks for more ids than those captures hold (see
gputop/backends/intel/xpu/mapping.py); the fake answers with the capture, so the columns it lacks
are None. `ps` is the user guide's (devices 0 and 1)."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from gputop.backends.base import BackendOptions, BackendUnavailable
from gputop.backends.intel.xpu.backend import XpuSmiBackend
from tests.support.paths import ROOT, gputop_cmd
from tests.support.peak_rss import peak_run
from tests.support.procs import alive
from tests.support.xpu_smi import (
    DISCOVERY_A310,
    DISCOVERY_FLEX,
    DUMP_A310,
    DUMP_FLEX_BLANK,
    PS,
    FakeXpuSmi,
)

DISCOVERY = "discovery --dump 1,2,6,8,11,16"
DUMP = "dump -d -1 -m 0,1,2,3,4,18 -i 1 -n 1"


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


def a310(fake: FakeXpuSmi) -> None:
    fake.set([(DISCOVERY, {"file": DISCOVERY_A310}), (DUMP, {"file": DUMP_A310}),
              ("ps", {"file": PS})])


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


def test_hang_is_bounded_with_one_line(fake_xpu_smi: FakeXpuSmi) -> None:
    fake_xpu_smi.set([(DISCOVERY, {"delay": 60, "file": DISCOVERY_A310})])
    started = time.monotonic()
    r = run("--backend", "xpu-smi", "snapshot", env={"GPUTOP_XPU_SMI_TIMEOUT": "1"})
    assert time.monotonic() - started < 15
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == (f"gputop: xpu-smi is present but unusable: `xpu-smi {DISCOVERY}` did not "
                        "answer within 1 s\n")
    assert wait_for(lambda: not [p for p in fake_xpu_smi.pids() if alive(p)])


def test_printing_forever_is_stopped_with_one_line(fake_xpu_smi: FakeXpuSmi) -> None:
    fake_xpu_smi.set([(DISCOVERY, {"file": DISCOVERY_A310, "forever": True})])
    started = time.monotonic()
    code, peak_kib, stderr = peak_run("snapshot", "--backend", "xpu-smi",
                                      env={"GPUTOP_XPU_SMI_TIMEOUT": "60"})
    assert time.monotonic() - started < 30  # stopped at the cap, not at the timeout
    assert code == 1 and stderr.count("\n") == 0, stderr
    assert f"`xpu-smi {DISCOVERY}` printed more than 4 MiB" in stderr
    assert peak_kib < 300 * 1024, f"peak RSS {peak_kib // 1024} MiB"
    assert not [p for p in fake_xpu_smi.pids() if alive(p)]


def test_dying_is_one_line(fake_xpu_smi: FakeXpuSmi) -> None:
    fake_xpu_smi.set([(DISCOVERY, {"rc": 1, "stderr": "simulated failure for the test\n"})])
    r = run("--backend", "xpu-smi", "snapshot", "--json")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == (f"gputop: xpu-smi is present but unusable: `xpu-smi {DISCOVERY}` exited "
                        "with status 1: simulated failure for the test\n")


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


def test_auto_detection_tries_xpu_smi_where_sysfs_has_no_card(fake_xpu_smi: FakeXpuSmi) -> None:
    a310(fake_xpu_smi)
    r = run("snapshot", "--json")
    if r.returncode == 0 and json.loads(r.stdout)["backend"] != "xpu-smi":
        pytest.skip(f"this machine has a {json.loads(r.stdout)['backend']} device, tried first")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["backend"] == "xpu-smi" and r.stderr == ""


def test_auto_detection_without_xpu_smi_is_one_line_that_does_not_name_it() -> None:
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if not os.path.exists(os.path.join(p, "xpu-smi")))
    r = run("snapshot", "--json", env={"PATH": path})
    if r.returncode == 0:  # a machine where a device answers
        assert json.loads(r.stdout)["backend"] != "xpu-smi"
        return
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1, r.stderr
    assert "xpu-smi" not in r.stderr


def test_a_timeout_out_of_range_in_the_environment_is_one_line(fake_xpu_smi: FakeXpuSmi) -> None:
    a310(fake_xpu_smi)
    r = run("--backend", "xpu-smi", "snapshot", env={"GPUTOP_XPU_SMI_TIMEOUT": "inf"})
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r.stderr
    assert "GPUTOP_XPU_SMI_TIMEOUT: expected a number from 0.1 to 3600 s" in r.stderr
    assert fake_xpu_smi.calls() == []  # refused before xpu-smi runs


# ------------------------------------------------------------------ the backend object


def open_backend(**kw) -> XpuSmiBackend:
    backend = XpuSmiBackend(BackendOptions(), **kw)
    backend.open()
    return backend


def test_a_hanging_dump_never_blocks_open_or_sample(fake_xpu_smi: FakeXpuSmi) -> None:
    fake_xpu_smi.set([(DISCOVERY, {"file": DISCOVERY_A310}), (DUMP, {"delay": 30}),
                      ("ps", {"delay": 30})])
    started = time.monotonic()
    backend = open_backend(timeout_s=0.5, refresh_s=0.1)
    try:
        assert time.monotonic() - started < 5  # the first round is bounded too
        t0 = time.monotonic()
        dev = backend.sample().devices[0]
        assert time.monotonic() - t0 < 0.1
        assert dev.status == "error" and f"`xpu-smi {DUMP}` did not answer within 0.5 s" \
            in (dev.status_reason or "")
        assert dev.name == "Intel(R) Arc(TM) A310 LP Graphics"  # what `discovery` said stays
    finally:
        t0 = time.monotonic()
        backend.close()
        assert time.monotonic() - t0 < 2.0  # close kills the call in flight
    assert wait_for(lambda: not [p for p in fake_xpu_smi.pids() if alive(p)])


def test_processes_are_read_only_while_a_consumer_shows_them(fake_xpu_smi: FakeXpuSmi) -> None:
    a310(fake_xpu_smi)
    backend = open_backend(refresh_s=0.05)
    try:
        backend.sample(wants={"utilization_gpu_pct": 0.0})
        reads = backend.reads
        assert wait_for(lambda: backend.reads >= reads + 2)
        assert fake_xpu_smi.calls()[-1] == DUMP  # no `ps` after that sample
        backend.sample()  # EVERYTHING: processes wanted again
        n = len(fake_xpu_smi.calls())
        assert wait_for(lambda: "ps" in fake_xpu_smi.calls()[n:])
    finally:
        backend.close()


def test_an_answer_that_is_not_the_csv_is_unavailable(fake_xpu_smi: FakeXpuSmi) -> None:
    fake_xpu_smi.set([(DISCOVERY, {})])  # exits 0 having printed nothing
    with pytest.raises(BackendUnavailable, match=r"^xpu-smi is present but unusable: "
                       rf"`xpu-smi {DISCOVERY}` printed no 'Device ID' header$"):
        open_backend()
