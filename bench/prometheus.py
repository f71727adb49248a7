"""Prometheus at scale, both directions.

1. The cluster view reading a real Prometheus that holds N nodes × G GPUs (default 1000 × 8):
   the data are generated as OpenMetrics text, one sample per series, turned into a
   TSDB block by `promtool tsdb create-blocks-from openmetrics`, and served by a real
   `prometheus` on 127.0.0.1. Prints the refresh time (all instant queries of one refresh and
   building every node's snapshot) and the viewer's CPU while it refreshes every 5 s.
2. The exporter's own cost: `gputop exporter --backend sim --scenario crowded` (8 GPUs × 32
   processes, --top-processes 32) scraped once a second: /metrics latency p50/p99, and CPU per
   scrape = (exporter CPU with scrapes − CPU of an equal window without) / scrapes.

Usage: python bench/prometheus.py [--nodes 1000] [--gpus 8] [--seconds 30] [--skip-fleet]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from gputop.cluster.prometheus import PrometheusCluster  # noqa: E402
from gputop.exporter import dcgm  # noqa: E402
from tests.exporter.prom_harness import Prometheus, find, start_exporter, stop  # noqa: E402

OWN = (("gputop_snapshot_timestamp_seconds", None), ("gputop_power_limit_watts", 700.0),
       ("gputop_memory_total_bytes", 81559 * 1024 * 1024))


def fleet_openmetrics(path: Path, nodes: int, gpus: int, stamp: float) -> int:
    """What N gputop exporters would have had scraped, 30 s ago. Returns the series count."""
    count = 0
    ts = f"{stamp:.3f}"
    with path.open("w") as out:
        def line(name: str, labels: str, value: float) -> None:
            nonlocal count
            out.write(f"{name}{{{labels}}} {value} {ts}\n")
            count += 1

        for name in ("up", *(m.name for m in dcgm.METRICS), "gputop_info", "gputop_device_status",
                     *(n for n, _ in OWN)):
            out.write(f"# TYPE {name} gauge\n")
            for n in range(nodes):
                node = f'instance="10.0.{n // 250}.{n % 250}:9400",job="gpus"'
                host = f'Hostname="gpu{n:04d}",hostname="gpu{n:04d}"'
                if name == "up":
                    line(name, node, 1)
                    continue
                if name == "gputop_info":
                    line(name, f'{node},{host},backend="nvml",version="0.1.0"', 1)
                    continue
                if name == "gputop_snapshot_timestamp_seconds":
                    line(name, f"{node},{host}", stamp)
                    continue
                for g in range(gpus):
                    dev = (f'{node},gpu="{g}",UUID="GPU-{n:08x}-{g:04x}",'
                           f'pci_bus_id="00000000:{16 * (g + 1):02X}:00.0",device="nvidia{g}",'
                           f'modelName="NVIDIA H100 80GB HBM3",{host},'
                           f'DCGM_FI_DRIVER_VERSION="580.95.05"')
                    if name == "gputop_device_status":
                        line(name, f'{dev},status="ok"', 1)
                    else:
                        line(name, dev, dict(OWN).get(name) or 40.0 + (n + g) % 50)
        out.write("# EOF\n")
    return count


def cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def bench_view(nodes: int, gpus: int, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        stamp = time.time()  # about 30 s old by the time the view asks
        t0 = time.perf_counter()
        series = fleet_openmetrics(work / "fleet.om", nodes, gpus, stamp)
        generated = time.perf_counter() - t0
        t0 = time.perf_counter()
        subprocess.run([find("promtool"), "tsdb", "create-blocks-from", "openmetrics",
                        str(work / "fleet.om"), str(work / "data")], check=True,
                       capture_output=True)
        print(f"{nodes} nodes × {gpus} GPUs: {series} series (generated in {generated:.1f} s, "
              f"block written in {time.perf_counter() - t0:.1f} s)")
        (work / "fleet.om").unlink()
        prom = Prometheus(work, [], interval="15s")
        try:
            cluster = PrometheusCluster(prom.url, '{job="gpus"}', interval=5.0, timeout=30.0)
            times = []
            for _ in range(5):
                assert cluster.refresh(), cluster.problem
                times.append(cluster.refresh_s)
            statuses = cluster.statuses()
            ok = sum(s.state == "ok" for s in statuses)
            gpus_seen = sum(len(s.snapshot.devices) for s in statuses if s.snapshot)
            print(f"  refresh: median {statistics.median(times) * 1e3:.0f} ms, max "
                  f"{max(times) * 1e3:.0f} ms over {len(times)} ({ok}/{len(statuses)} nodes ok, "
                  f"{gpus_seen} GPUs)")
            me = psutil.Process()
            server = psutil.Process(prom.proc.pid)
            before, server_before = cpu_seconds(me), cpu_seconds(server)
            start = time.monotonic()
            cluster.start()
            time.sleep(seconds)
            cluster.stop()
            wall = time.monotonic() - start
            used = cpu_seconds(me) - before
            print(f"  viewer CPU at a 5 s refresh: {100 * used / wall:.1f}% of one core over "
                  f"{wall:.0f} s (Prometheus itself: "
                  f"{100 * (cpu_seconds(server) - server_before) / wall:.1f}%); viewer peak RSS "
                  f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        finally:
            prom.stop()


def bench_exporter(seconds: float) -> None:
    exporter = start_exporter("--backend", "sim", "--scenario", "crowded",
                              "--top-processes", "32")
    try:
        proc = psutil.Process(exporter.proc.pid)
        url = f"http://{exporter.target}/metrics"
        time.sleep(2)
        idle0 = cpu_seconds(proc)
        time.sleep(seconds)
        idle = cpu_seconds(proc) - idle0
        latencies = []
        busy0 = cpu_seconds(proc)
        start = time.monotonic()
        size = 0
        for k in range(int(seconds)):
            time.sleep(max(0.0, start + k - time.monotonic()))
            t = time.perf_counter()
            with urllib.request.urlopen(url, timeout=5) as answer:
                size = len(answer.read())
            latencies.append(time.perf_counter() - t)
        busy = cpu_seconds(proc) - busy0
        latencies.sort()
        p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
        print(f"exporter, 8 GPUs × 32 processes, {len(latencies)} scrapes at 1/s "
              f"({size / 1024:.0f} KiB each): latency p50 "
              f"{statistics.median(latencies) * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms; CPU per "
              f"scrape {(busy - idle) / len(latencies) * 1e3:.2f} ms (exporter without scrapes: "
              f"{100 * idle / seconds:.1f}% of one core, with: {100 * busy / seconds:.1f}%)")
    finally:
        stop(exporter.proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--skip-fleet", action="store_true", help="only the exporter's cost")
    args = parser.parse_args()
    os.chdir(ROOT)
    if not args.skip_fleet:
        bench_view(args.nodes, args.gpus, args.seconds)
    bench_exporter(args.seconds)


if __name__ == "__main__":
    main()
