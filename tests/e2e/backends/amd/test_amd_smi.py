"""The amd-smi backend through the real subprocess path, against a fake `amd-smi` on PATH that
prints the real captures (tests/fixtures/amd); its hang, flood and death are checked with the
other tools' in tests/e2e/backends/test_smi_tools.py.

No node has been captured whole: `static` is 8 MI300X, `process` 2 R9700 of another node, and
`metric` only its first 40 lines. A test that has the fake print two of them checks that each is
read as its capture says, not that they are one node's."""

from __future__ import annotations

import json

import pytest

from gputop.backends.base import BackendUnavailable
from tests.support.amd_smi import (
    METRIC_PARTIAL,
    NO_ACCESS_BANNER,
    PROCESS_R9700,
    STATIC_MI300X,
    FakeAmdSmi,
)
from tests.support.smi_tools import AMD_SMI, run

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


def test_an_answer_with_no_json_is_unavailable(fake_amd_smi: FakeAmdSmi) -> None:
    fake_amd_smi.set([("static --json", {})])  # exits 0 having printed nothing
    with pytest.raises(BackendUnavailable, match=r"^amd-smi is present but unusable: "
                       r"`amd-smi static --json` printed no JSON$"):
        AMD_SMI.open_backend()
