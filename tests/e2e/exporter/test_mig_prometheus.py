"""A MIG node behind a real Prometheus: `cluster --prometheus` shows each MIG GPU as its
snapshot does, from series that come one per GPU instance (GPU_I_ID), as dcgm-exporter sends them.

A GPU instance's memory used adds up to its GPU's; power, clocks and temperature come repeated on
each instance's series and are counted once; an instance's own GPM and free memory are no figure
of the GPU's, so the GPU shows none rather than one instance's."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gputop.cluster.prometheus import PrometheusCluster
from gputop.cluster.summary import summarize_document
from tests.support.prom_harness import ROOT, Prometheus, start_exporter, stop, wait_for

SCENARIO = ("--backend", "sim", "--scenario", "mig", "--seed", "1")


def snapshot() -> dict:
    out = subprocess.run([sys.executable, "-m", "gputop", "snapshot", "--json", *SCENARIO],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def mig_lab(tmp_path_factory):
    exporter = start_exporter(*SCENARIO, "--interval", "60")
    prom = None
    try:
        prom = Prometheus(tmp_path_factory.mktemp("prom-mig"), [exporter.target])
        wait_for(lambda: len(prom.query("gputop_info")) == 1 and
                 prom.query("DCGM_FI_DEV_FB_USED"), 30.0, "the first scrape")
        yield prom, exporter
    finally:
        if prom is not None:
            prom.stop()
        stop(exporter.proc)


def test_a_mig_gpu_in_the_prometheus_view_is_its_snapshot(mig_lab):
    prom, _ = mig_lab
    want = snapshot()
    mig = [d for d in want["devices"] if d["mig_instances"]]
    assert mig and len(mig) < len(want["devices"])  # the scenario has both kinds
    # the exporter sends the MIG GPUs' memory one series per GPU instance
    used = prom.query(f'DCGM_FI_DEV_FB_USED{{gpu="{mig[0]["index"]}"}}')
    assert len(used) == len({i["gpu_instance_id"] for i in mig[0]["mig_instances"]}) > 1
    out = subprocess.run([sys.executable, "-m", "gputop", "cluster", "--prometheus", prom.url,
                          "--once", "--json"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    [node] = json.loads(out.stdout)["nodes"]
    got = node["snapshot"]["devices"]
    assert len(got) == len(want["devices"])
    for mine, dev in zip(got, want["devices"]):
        for key in ("memory_used_mib", "memory_total_mib", "power_draw_w", "temperature_c",
                    "clock_sm_mhz"):
            assert mine[key] == pytest.approx(dev[key], rel=1e-9), (dev["index"], key)
        if dev["mig_instances"]:
            # no utilization under MIG, and no GPU-wide GPM or free memory made of one instance's
            assert mine["utilization_gpu_pct"] is None
            assert mine["memory_free_mib"] is None
            assert mine["saturation"]["sm_active_pct"] is None
        else:
            assert mine["memory_free_mib"] == pytest.approx(dev["memory_free_mib"])
            assert mine["saturation"]["sm_active_pct"] == \
                pytest.approx(dev["saturation"]["sm_active_pct"])


def test_the_nodes_table_counts_a_mig_gpus_power_once(mig_lab):
    prom, _ = mig_lab
    cluster = PrometheusCluster(prom.url)
    try:
        assert cluster.refresh(), cluster.problem
        [status] = cluster.statuses()
        got, want = status.summary, summarize_document(snapshot())
        assert got.gpus == want.gpus
        for key in ("mem_used_mib", "mem_total_mib", "power_w", "power_limit_w"):
            assert getattr(got, key) == pytest.approx(getattr(want, key), rel=1e-9), key
    finally:
        cluster.stop()
