"""A mixed fleet behind a real Prometheus: an AMD node (the exporter on a captured amdgpu sysfs
tree), an Intel node (the simulator's Max 1550) and an NVIDIA node (the simulator). The exporter
serves AMD and Intel GPUs under gputop's own families only, no DCGM_FI_* name; `cluster
--prometheus` takes each figure from the DCGM name where a GPU has one and else from gputop's own
family, so every node shows its utilization, memory used and power as its snapshot has them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gputop.cluster.prometheus import QUERIES, SUMMARY_QUERIES, PrometheusCluster
from gputop.cluster.summary import summarize_document
from tests.support.amd import mount
from tests.support.prom_harness import ROOT, Prometheus, start_exporter, stop, wait_for

AMD_TREE = "sysfs_RX6900XT-Navi21-RDNA2_amdgpu_lact-snapshot_gpu_metrics"
# The figures compared: each has a DCGM name and a gputop family (prometheus.OWN).
FIGURES = ("utilization_gpu_pct", "memory_used_mib", "power_draw_w", "energy_j",
           "temperature_c", "temperature_memory_c", "clock_sm_mhz", "clock_mem_mhz")


def snapshot_json(*backend: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "gputop", "snapshot", "--json", *backend],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = mount(tmp_path_factory.mktemp("amd"), AMD_TREE)
    backends = {"amd": ("--backend", "amd", "--sysfs-root", str(root)),
                # Intel at its first sample: power, energy, temperature, clock; no busy time nor memory
                "intel": ("--backend", "sim", "--scenario", "max-1550", "--seed", "1"),
                "nvidia": ("--backend", "sim", "--scenario", "training", "--seed", "1")}
    exporters = {}
    prom = None
    try:
        for vendor, args in backends.items():
            exporters[vendor] = start_exporter(*args, "--interval", "60")
        prom = Prometheus(tmp_path_factory.mktemp("prom"), [e.target for e in exporters.values()])
        wait_for(lambda: len(prom.query("gputop_info")) == len(exporters), 30.0,
                 "the first scrapes")
        yield prom, {vendor: (exporters[vendor], snapshot_json(*args))
                     for vendor, args in backends.items()}
    finally:
        if prom is not None:
            prom.stop()
        for exporter in exporters.values():
            stop(exporter.proc)


def test_amd_and_intel_are_served_under_gputop_names_only(fleet):
    prom, nodes = fleet
    for vendor in ("amd", "intel"):
        target = nodes[vendor][0].target
        assert prom.query(f'{{__name__=~"DCGM_.*", instance="{target}"}}') == []
        assert prom.query(f'gputop_power_draw_watts{{instance="{target}"}}')


def test_every_vendor_shows_its_figures_in_the_whole_view(fleet):
    prom, nodes = fleet
    out = subprocess.run([sys.executable, "-m", "gputop", "cluster", "--prometheus", prom.url,
                          "--once", "--json"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    got = {n["host"].split(" (")[1].rstrip(")"): n["snapshot"]
           for n in json.loads(out.stdout)["nodes"]}
    for vendor, (exporter, snap) in nodes.items():
        mine = got[exporter.target]
        assert len(mine["devices"]) == len(snap["devices"]) > 0
        for dev, want in zip(mine["devices"], snap["devices"]):
            assert dev["vendor"] == want["vendor"] == vendor
            for key in FIGURES:
                if want[key] is None:
                    assert dev[key] is None, (vendor, key)  # N/A stays N/A, never 0
                else:
                    assert dev[key] == pytest.approx(want[key], rel=1e-9), (vendor, key)
    amd = got[nodes["amd"][0].target]["devices"][0]
    assert amd["utilization_gpu_pct"] == pytest.approx(3.0)  # gpu_busy_percent of the capture
    assert amd["power_draw_w"] == pytest.approx(36.0)


def test_every_vendor_shows_its_figures_in_the_nodes_table(fleet):
    prom, nodes = fleet
    cluster = PrometheusCluster(prom.url)
    try:
        assert cluster.refresh(), cluster.problem
        by_key = {s.host.split(" (")[1].rstrip(")"): s for s in cluster.statuses()}
        for vendor, (exporter, snap) in nodes.items():
            got, want = by_key[exporter.target].summary, summarize_document(snap)
            assert got.gpus == want.gpus
            for key in ("util_pct", "mem_used_mib", "mem_total_mib", "power_w",
                        "power_limit_w"):
                if getattr(want, key) is None:  # Intel's first sample: no busy time yet
                    assert getattr(got, key) is None, (vendor, key)
                else:
                    assert getattr(got, key) == pytest.approx(getattr(want, key), rel=1e-9), \
                        (vendor, key)
        # What the NVIDIA node shows from DCGM's names, the AMD node shows from gputop's.
        amd = by_key[nodes["amd"][0].target].summary
        assert (amd.util_pct, amd.power_w) == (pytest.approx(3.0), pytest.approx(36.0))
        assert amd.mem_used_mib == pytest.approx(668274688 / 2**20)
    finally:
        cluster.stop()


def test_the_fallback_costs_no_query():
    # one query per figure either way: the own family is `or`'d into the DCGM one
    assert len(SUMMARY_QUERIES) == 13 and len(QUERIES) == 40
