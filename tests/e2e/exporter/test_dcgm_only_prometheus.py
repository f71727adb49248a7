"""`cluster --prometheus` on a Prometheus that holds only dcgm-exporter's metrics.

No dcgm-exporter runs here (it needs DCGM and a GPU), so a real Prometheus scrapes a
`gputop exporter` and drops every `gputop_…` series as it ingests them (metric_relabel_configs):
what it stores then has dcgm-exporter's names, types and labels and nothing else, as a
dcgm-exporter target would. The view must show each GPU's figures from those alone."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.prom_harness import ROOT, Prometheus, start_exporter, stop, wait_for

SCENARIO = ("--backend", "sim", "--scenario", "training", "--seed", "4")
DROP_GPUTOP = [{"source_labels": ["__name__"], "regex": "gputop_.*", "action": "drop"}]
FROM_DCGM = ("memory_used_mib", "memory_free_mib", "memory_reserved_mib", "memory_total_mib",
             "utilization_gpu_pct", "utilization_memory_pct", "temperature_c", "power_draw_w",
             "energy_j", "clock_sm_mhz", "clock_mem_mhz")


@pytest.fixture(scope="module")
def dcgm_prom(tmp_path_factory):
    exporter = start_exporter(*SCENARIO, "--interval", "60")
    prom = None
    try:
        prom = Prometheus(tmp_path_factory.mktemp("prom-dcgm"), [exporter.target],
                          metric_relabel=DROP_GPUTOP)
        wait_for(lambda: len(prom.query("DCGM_FI_DEV_GPU_UTIL")) == 8, 30.0, "the first scrape")
        yield prom
    finally:
        if prom is not None:
            prom.stop()
        stop(exporter.proc)


def test_a_dcgm_exporter_target_shows_its_gpus(dcgm_prom):
    assert dcgm_prom.query('{__name__=~"gputop_.*"}') == []  # only dcgm-exporter's names
    want = json.loads(subprocess.run(
        [sys.executable, "-m", "gputop", "snapshot", "--json", *SCENARIO], cwd=ROOT,
        capture_output=True, text=True, timeout=60, check=True).stdout)
    out = subprocess.run([sys.executable, "-m", "gputop", "cluster", "--prometheus",
                          dcgm_prom.url, "--once", "--json"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    [node] = json.loads(out.stdout)["nodes"]
    assert node["state"] == "ok" and node["mode"] == "dcgm"
    snap = node["snapshot"]
    assert snap["host"] == want["host"]  # named by the Hostname label
    assert snap["driver_version"] == want["driver_version"]
    assert len(snap["devices"]) == len(want["devices"]) == 8
    for mine, dev in zip(snap["devices"], want["devices"]):
        assert (mine["uuid"], mine["name"], mine["pci_bus_id"]) == \
            (dev["uuid"], dev["name"], dev["pci_bus_id"])
        for key in FROM_DCGM:
            assert mine[key] == pytest.approx(dev[key], rel=1e-9), (dev["index"], key)
        for key in ("sm_active_pct", "tensor_active_pct", "dram_bw_pct"):
            assert mine["saturation"][key] == pytest.approx(dev["saturation"][key]), key
        assert mine["saturation"]["source"] == "dcgm"
        # what only gputop's own family says is absent, never made up
        assert mine["processes"] == [] and mine["power_limit_w"] is None
    assert snap["hints"] == []
