"""The amd-smi backend through the real subprocess path, against a fake `amd-smi` on PATH that
prints the real captures (tests/fixtures/amd), hangs, prints for ever or dies.

No node has been captured whole: `static` is 8 MI300X, `process` 2 R9700 of another node, and
`metric` only its first 40 lines. A test that has the fake print two of them checks that each is
read as its capture says, not that they are one node's."""

from __future__ import annotations

import json
import time

import pytest

from gputop.backends.amd.smi.backend import AmdSmiBackend
from gputop.backends.base import BackendOptions, BackendUnavailable
from tests.support.amd_smi import (
    METRIC_PARTIAL,
    NO_ACCESS_BANNER,
    PROCESS_R9700,
    STATIC_MI300X,
    FakeAmdSmi,
)
from tests.support.smi_tools import AMD_SMI, left_running, run, wait_for

CUT_OFF = ("`amd-smi metric --json`: its JSON stops at line 40, before the document ends (the "
           "output was cut off)")






def captures(fake: FakeAmdSmi) -> None:
    fake.set(AMD_SMI.answers)


def test_snapshot_json_with_the_captures(fake_amd_smi: FakeAmdSmi) -> None:
    captures(fake_amd_smi)
    r = run("--backend", "amd-smi", "snapshot", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["backend"], doc["driver_version"]) == ("amd-smi", "6.16.13")
    devs = doc["devices"]
    assert [(d["index"], d["name"], d["vendor"]) for d in devs] \
        == [(i, "AMD Instinct MI300X", "amd") for i in range(8)]
    assert devs[7]["pci_bus_id"] == "0000:dd:00.0"
    assert (devs[0]["memory_total_mib"], devs[0]["power_limit_w"], devs[0]["pcie_gen_max"]) \
        == (196592.0, 750.0, 5)
    # the metric capture is cut off: every GPU says so, and shows no reading it lacks
    assert {(d["status"], d["status_reason"]) for d in devs} \
        == {("error", f"amd-smi's last read failed ({CUT_OFF}); no reading yet")}
    assert {d["utilization_gpu_pct"] for d in devs} == {None}
    assert {d["power_draw_w"] for d in devs} == {None}
    # `process` lists 4 PIDs under GPU 0 and 1 (of the R9700 node), none under the others
    assert [[p["pid"] for p in d["processes"]] for d in devs[:3]] \
        == [[213534, 213890, 213952, 213953]] * 2 + [[]]
    assert devs[0]["processes"][2]["gpu_memory_mib"] * 1024 * 1024 == 21008920000
    assert devs[0]["processes"][0]["sm_pct"] is None  # one reading of a counter is no share


def test_text_before_the_json_is_skipped_and_said_once(fake_amd_smi: FakeAmdSmi) -> None:
    fake_amd_smi.set([("static --json", {"file": STATIC_MI300X, "before": NO_ACCESS_BANNER}),
                      ("metric --json", {"file": METRIC_PARTIAL}),
                      ("process --json", {"file": PROCESS_R9700})])
    r = run("--backend", "amd-smi", "snapshot", "--json")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["devices"]) == 8
    assert r.stderr.splitlines() == [
        "gputop: note: amd-smi printed before its JSON: Permission needed to access required GPU "
        "device node(s):",
        "gputop: note: amd-smi printed before its JSON: - /dev/dri/card0: Permission denied; "
        "owner=root(0):video(39);"]












# ------------------------------------------------------------------ the backend object


def open_backend(**kw) -> AmdSmiBackend:
    backend = AmdSmiBackend(BackendOptions(), **kw)
    backend.open()
    return backend


def test_a_hanging_metric_never_blocks_open_or_sample(fake_amd_smi: FakeAmdSmi) -> None:
    fake_amd_smi.set([("static --json", {"file": STATIC_MI300X}),
                      ("metric --json", {"delay": 30}), ("process --json", {"delay": 30})])
    started = time.monotonic()
    backend = open_backend(timeout_s=0.5, refresh_s=0.1)
    try:
        assert time.monotonic() - started < 5  # the first round is bounded too
        t0 = time.monotonic()
        dev = backend.sample().devices[0]
        assert time.monotonic() - t0 < 0.1
        assert dev.status == "error" and "`amd-smi metric --json` did not answer within 0.5 s" \
            in dev.status_reason
        assert dev.name == "AMD Instinct MI300X"  # what `static` said stays
    finally:
        t0 = time.monotonic()
        backend.close()
        assert time.monotonic() - t0 < 2.0  # close kills the call in flight
    assert wait_for(lambda: not left_running(fake_amd_smi))


def test_processes_are_read_only_while_a_consumer_shows_them(fake_amd_smi: FakeAmdSmi) -> None:
    captures(fake_amd_smi)
    backend = open_backend(refresh_s=0.05)
    try:
        backend.sample(wants={"utilization_gpu_pct": 0.0})
        reads = backend.reads
        assert wait_for(lambda: backend.reads >= reads + 2)
        assert fake_amd_smi.calls()[-1] == "metric --json"  # no `process` after that sample
        backend.sample()  # EVERYTHING: processes wanted again
        n = len(fake_amd_smi.calls())
        assert wait_for(lambda: "process --json" in fake_amd_smi.calls()[n:])
    finally:
        backend.close()


def test_an_answer_with_no_json_is_unavailable(fake_amd_smi: FakeAmdSmi) -> None:
    fake_amd_smi.set([("static --json", {})])  # exits 0 having printed nothing
    with pytest.raises(BackendUnavailable, match=r"^amd-smi is present but unusable: "
                       r"`amd-smi static --json` printed no JSON$"):
        open_backend()

