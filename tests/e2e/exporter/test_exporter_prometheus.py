"""A real Prometheus on 127.0.0.1 scraping real `gputop exporter` processes on the simulator.

The exporters sample once every 60 s, so the snapshot each serves holds still for the whole
module, and `gputop snapshot --seed S` prints that very snapshot (the simulator is deterministic
at tick 0): every value Prometheus stores can be compared exactly."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gputop.formats import dcgm
from tests.support.prom_harness import ROOT, Prometheus, start_exporter, stop, wait_for

SEEDS = (("training", "1"), ("straggler", "2"))
LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "hostname",
          "DCGM_FI_DRIVER_VERSION")
# Every query of dcgm-exporter's Grafana dashboard (grafana/dcgm-exporter-dashboard.json), with
# its $Hostname and $gpu variables set to "all".
DASHBOARD = (
    'max(DCGM_FI_DEV_GPU_TEMP{Hostname=~".*", gpu=~".*"}) by (Hostname, gpu, uuid)',
    'max(DCGM_FI_DEV_POWER_USAGE{Hostname=~".*", gpu=~".*"}) by (Hostname, gpu, uuid)',
    'max(DCGM_FI_DEV_SM_CLOCK{Hostname=~".*", gpu=~".*"} * 1000000) by (Hostname, UUID, gpu)',
    'max(DCGM_FI_PROF_GR_ENGINE_ACTIVE{Hostname=~".*", gpu=~".*"}) '
    'by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)',
    'max(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{Hostname=~".*", gpu=~".*"}) '
    'by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)',
    'max(DCGM_FI_DEV_FB_USED{Hostname=~".*", gpu=~".*"}) by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)',
)


def snapshot_json(scenario: str, seed: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "gputop", "snapshot", "--json", "--backend", "sim",
                          "--scenario", scenario, "--seed", seed], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    exporters = []
    prom = None
    try:
        for scenario, seed in SEEDS:
            exporters.append(start_exporter("--backend", "sim", "--scenario", scenario,
                                            "--seed", seed, "--interval", "60",
                                            "--hostname-label", "both"))
        # A third exporter, stopped by the test that watches a node go down.
        exporters.append(start_exporter("--backend", "sim", "--seed", "3", "--interval", "60"))
        prom = Prometheus(tmp_path_factory.mktemp("prom"), [e.target for e in exporters])
        wait_for(lambda: len(prom.query("DCGM_FI_DEV_GPU_UTIL")) == 8 * len(exporters) and
                 len(prom.query("gputop_info")) == len(exporters), 30.0, "the first scrapes")
        yield prom, exporters
    finally:
        if prom is not None:
            prom.stop()
        for exporter in exporters:
            stop(exporter.proc)


def by_target(prom: Prometheus, promql: str) -> dict[tuple[str, str], dict]:
    return {(s["metric"]["instance"], s["metric"].get("gpu", "")): s
            for s in prom.query(promql)}


def test_prometheus_holds_every_metric_with_the_snapshots_values_and_labels(lab):
    prom, exporters = lab
    for exporter, (scenario, seed) in zip(exporters, SEEDS):
        snap = snapshot_json(scenario, seed)
        devices = {d["index"]: _device(d) for d in snap["devices"]}
        model = _snapshot(snap)
        for metric in dcgm.DEFAULT:
            values = {i: dcgm.value(metric.field, model, dev) for i, dev in devices.items()}
            if metric.label or all(v is None for v in values.values()):
                continue
            got = by_target(prom, f'{metric.name}{{instance="{exporter.target}"}}')
            assert len(got) == 8, metric.name
            for dev in snap["devices"]:
                series = got[(exporter.target, str(dev["index"]))]
                labels = series["metric"]
                assert {k: labels[k] for k in LABELS} == {
                    "gpu": str(dev["index"]), "UUID": dev["uuid"], "pci_bus_id": dev["pci_bus_id"],
                    "device": f"nvidia{dev['index']}", "modelName": dev["name"],
                    "Hostname": snap["host"], "hostname": snap["host"],
                    "DCGM_FI_DRIVER_VERSION": snap["driver_version"]}
                assert float(series["value"][1]) == pytest.approx(values[dev["index"]],
                                                                  rel=1e-12), \
                    (metric.name, dev["index"])


def _snapshot(doc: dict):
    from gputop.core.model import snapshot_from_json

    return snapshot_from_json(doc)


def _device(doc: dict):
    from gputop.core.model import device_from_json

    return device_from_json(doc)


def test_every_dashboard_query_has_one_series_per_gpu(lab):
    prom, exporters = lab
    gpus = 8 * len(exporters)
    for promql in DASHBOARD:
        # The dashboard groups by Hostname and gpu: one host name here, so ask per target.
        for exporter in exporters:
            scoped = promql.replace('gpu=~".*"', f'gpu=~".*", instance="{exporter.target}"')
            assert len(prom.query(scoped)) == 8, scoped
    # The dashboard's $Hostname and $gpu variables come from DCGM_FI_DEV_FB_FREE's labels.
    assert len(prom.query('DCGM_FI_DEV_FB_FREE{Hostname=~".*"}')) == gpus


def cluster_once(prom: Prometheus, *extra: str) -> tuple[int, dict]:
    out = subprocess.run([sys.executable, "-m", "gputop", "cluster", "--prometheus", prom.url,
                          "--once", "--json", *extra], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert "Traceback" not in out.stderr, out.stderr
    return out.returncode, json.loads(out.stdout)


DEVICE_KEYS = ("index", "uuid", "name", "pci_bus_id", "status", "memory_used_mib",
               "memory_free_mib", "memory_reserved_mib", "memory_total_mib",
               "utilization_gpu_pct", "utilization_memory_pct", "temperature_c",
               "temperature_memory_c", "power_draw_w", "power_limit_w", "energy_j",
               "clock_sm_mhz", "clock_mem_mhz", "pcie_replay_count", "xid_last",
               "clock_event_reasons")


def test_cluster_view_lists_every_target_with_the_exporters_snapshots(lab):
    prom, exporters = lab
    code, doc = cluster_once(prom, "--selector", '{job="gpus"}')
    assert code == 0
    nodes = {n["host"].split(" (")[1].rstrip(")"): n for n in doc["nodes"]}
    assert set(nodes) == {e.target for e in exporters}
    for exporter, (scenario, seed) in zip(exporters, SEEDS):
        node = nodes[exporter.target]
        assert node["state"] == "ok" and node["mode"] == "exporter"
        snap = snapshot_json(scenario, seed)
        got = node["snapshot"]
        assert got["host"] == snap["host"] and got["backend"] == "sim"
        assert len(got["devices"]) == 8
        for mine, want in zip(got["devices"], snap["devices"]):
            for key in DEVICE_KEYS:
                expected = want[key]
                if isinstance(expected, (int, float)) and not isinstance(expected, bool):
                    assert mine[key] == pytest.approx(expected, rel=1e-9), key
                else:
                    assert mine[key] == expected, key
            for key in ("sm_active_pct", "tensor_active_pct", "dram_bw_pct", "source"):
                assert mine["saturation"][key] == pytest.approx(want["saturation"][key]), key
            top = sorted(want["processes"], key=lambda p: (-p["gpu_memory_mib"], p["pid"]))[:10]
            assert [(p["pid"], p["user"], p["gpu_memory_mib"]) for p in mine["processes"]] == \
                sorted((p["pid"], p["user"], p["gpu_memory_mib"]) for p in top)


def test_the_live_view_summaries_from_aggregates_equal_the_exporters_snapshots(lab):
    from gputop.cluster.prometheus import PrometheusCluster
    from gputop.cluster.summary import summarize_document
    from gputop.core.model import snapshot_to_json

    prom, exporters = lab
    cluster = PrometheusCluster(prom.url, '{job="gpus"}')
    try:
        assert cluster.refresh(), cluster.problem
        by_key = {s.host.split(" (")[1].rstrip(")"): s for s in cluster.statuses()}
        for exporter, (scenario, seed) in zip(exporters, SEEDS):
            status = by_key[exporter.target]
            assert status.snapshot is None  # the nodes table asks no per-GPU series
            got, want = status.summary, summarize_document(snapshot_json(scenario, seed))
            assert status.state == "ok" and status.mode == "exporter"
            assert got.gpus == want.gpus == 8
            for key in ("util_pct", "mem_used_mib", "mem_total_mib", "power_w",
                        "power_limit_w"):
                assert getattr(got, key) == pytest.approx(getattr(want, key), rel=1e-9), key
            hints = prom.query(f'gputop_hint{{instance="{exporter.target}"}}')
            assert got.hints == len(hints)
        # Opened, a node comes whole, as --once --json has it.
        victim = exporters[0]
        cluster.detail({by_key[victim.target].host})
        assert cluster.refresh(), cluster.problem
        opened = cluster.status(by_key[victim.target].host).snapshot
        code, doc = cluster_once(prom, "--selector", '{job="gpus"}')
        [once] = [n["snapshot"] for n in doc["nodes"] if victim.target in n["host"]]
        assert json.loads(json.dumps(snapshot_to_json(opened)))["devices"] == once["devices"]
    finally:
        cluster.stop()


def test_a_selector_that_matches_nothing_lists_no_node(lab):
    prom, _ = lab
    code, doc = cluster_once(prom, "--selector", '{job="other"}')
    assert doc == {"nodes": []} and code == 1


def test_a_stopped_exporter_turns_its_node_down(lab):
    prom, exporters = lab
    victim = exporters[-1]
    stop(victim.proc)
    try:
        wait_for(lambda: scrape_up(prom, victim.target) == "0", 10.0, "the failed scrape")
        code, doc = cluster_once(prom)
        states = {n["host"].split(" (")[-1].rstrip(")"): n["state"] for n in doc["nodes"]}
        assert code == 1
        assert states[victim.target] == "down"
        assert [states[e.target] for e in exporters[:-1]] == ["ok", "ok"]
    finally:
        # The lab is the module's: the node comes back, so the tests are independent of order.
        exporters[-1] = start_exporter(*victim.args, port=victim.port)
        wait_for(lambda: scrape_up(prom, victim.target) == "1", 15.0, "the node back up")


def scrape_up(prom: Prometheus, target: str) -> str | None:
    """Return Prometheus's latest ``up`` for ``target`` ("1", "0"), None before its first scrape."""
    return next((s["value"][1] for s in prom.query("up") if s["metric"]["instance"] == target),
                None)


def test_prometheus_unreachable_is_one_line_and_exit_1(tmp_path: Path):
    from tests.support.ssh_harness import free_port

    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "gputop", "cluster", "--prometheus",
                          f"http://127.0.0.1:{free_port()}", "--once", "--timeout", "3"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert time.monotonic() - started < 20
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Prometheus unreachable at http://127.0.0.1:" in lines[0]
