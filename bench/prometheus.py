"""Prometheus at scale, both directions.

1. The cluster view reading a real Prometheus that holds N nodes × G GPUs (default 1000 × 8):
   the data are generated as OpenMetrics text, one sample per series, turned into a
   TSDB block by `promtool tsdb create-blocks-from openmetrics`, and served by a real
   `prometheus` on 127.0.0.1. Prints the refresh time (all instant queries of one refresh and
   building what the view shows) three ways: the live nodes table (per-node aggregates), the
   same with one node opened (its GPUs whole), and every node whole (`--once --json`, the users
   view); then the viewer's CPU while it refreshes every 5 s, the transport alone and the
   whole cluster screen (Textual, headless) with it.
2. The exporter's own cost: `gputop exporter --backend sim --scenario crowded` (8 GPUs × 32
   processes, --top-processes 32) scraped once a second: /metrics latency p50/p99 over one
   kept-alive connection (as Prometheus scrapes) and with a new connection per scrape, and CPU
   per scrape = (exporter CPU with scrapes − CPU of an equal window without) / scrapes.

Usage: python bench/prometheus.py [--nodes 1000] [--gpus 8] [--seconds 30] [--skip-fleet]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from gputop.cluster.prometheus import VIEWED, PrometheusCluster  # noqa: E402
from tests.support.prom_harness import Prometheus, find, start_exporter, stop  # noqa: E402

OWN = (("gputop_snapshot_timestamp_seconds", None), ("gputop_power_limit_watts", 700.0),
       ("gputop_memory_total_bytes", 81559 * 1024 * 1024))


def fleet_openmetrics(path: Path, nodes: int, gpus: int, stamp: float,
                      hpc_jobs: Mapping[tuple[int, int], str] | None = None) -> int:
    """What N gputop exporters would have had scraped, 30 s ago. Returns the series count.
    ``hpc_jobs``: the Slurm job each (node, GPU index) holds, put on its series as the
    ``hpc_job`` label (dcgm-exporter's, from Slurm's job-mapping files; gputop's, from its
    processes' attribution)."""
    hpc_jobs = hpc_jobs or {}
    count = 0
    ts = f"{stamp:.3f}"
    with path.open("w") as out:
        def line(name: str, labels: str, value: float) -> None:
            nonlocal count
            out.write(f"{name}{{{labels}}} {value} {ts}\n")
            count += 1

        for name in ("up", *VIEWED, "gputop_info", "gputop_device_status",
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
                    if (n, g) in hpc_jobs:
                        dev += f',hpc_job="{hpc_jobs[n, g]}"'
                    if name == "gputop_device_status":
                        line(name, f'{dev},status="ok"', 1)
                    else:
                        line(name, dev, dict(OWN).get(name) or 40.0 + (n + g) % 50)
        out.write("# EOF\n")
    return count


def cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def timed_refreshes(cluster: PrometheusCluster, count: int) -> str:
    times = []
    for _ in range(count):
        assert cluster.refresh(), cluster.problem
        times.append(cluster.refresh_s)
    return (f"median {statistics.median(times) * 1e3:.0f} ms, max {max(times) * 1e3:.0f} ms "
            f"over {len(times)}")


def screen_cpu(url: str, nodes: int, seconds: float) -> str:
    """The cluster screen (headless) on a 5 s refresh: the viewer's CPU, UI included."""
    from gputop.tui.cluster import ClusterApp

    async def run() -> str:
        cluster = PrometheusCluster(url, '{job="gpus"}', interval=5.0, timeout=30.0)
        app = ClusterApp(cluster, interval=5.0)
        async with app.run_test(size=(200, 60)) as pilot:
            while app.nodes_table.row_count < nodes:
                await pilot.pause(0.1)
            await pilot.pause(1.0)
            start, cpu = time.monotonic(), time.process_time()
            await pilot.pause(seconds)
            wall = time.monotonic() - start
            used = time.process_time() - cpu
        return f"{100 * used / wall:.1f}% of one core over {wall:.0f} s"

    return asyncio.run(run())


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
            # Untimed: the first queries read the fresh block from disk; a Prometheus that has
            # been scraping holds these series in its head block.
            assert cluster.refresh(), cluster.problem
            figures = timed_refreshes(cluster, 5)
            statuses = cluster.statuses()
            ok = sum(s.state == "ok" for s in statuses)
            gpus_seen = sum(s.summary.gpus for s in statuses if s.summary)
            print(f"  refresh, nodes table: {figures} ({ok}/{len(statuses)} nodes ok, "
                  f"{gpus_seen} GPUs)")
            cluster.detail({statuses[nodes // 2].host})
            print(f"  refresh, one node opened: {timed_refreshes(cluster, 5)}")
            cluster.detail(every=True)
            figures = timed_refreshes(cluster, 2)
            whole = sum(len(s.snapshot.devices) for s in cluster.statuses() if s.snapshot)
            print(f"  refresh, every node whole (--once --json, users view): {figures} "
                  f"({whole} GPUs)")
            cluster.detail(())
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
            print(f"  viewer CPU with the cluster screen (headless): "
                  f"{screen_cpu(prom.url, nodes, seconds)}")
        finally:
            prom.stop()


def scrape_latencies(target: str, seconds: float, keep_alive: bool) -> tuple[list[float], int]:
    host, port = target.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    latencies = []
    size = 0
    start = time.monotonic()
    for k in range(int(seconds)):
        time.sleep(max(0.0, start + k - time.monotonic()))
        t = time.perf_counter()
        if not keep_alive:
            conn.close()
        # Prometheus asks for gzip; the exporter answers plain, which its scrapes accept.
        conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
        size = len(conn.getresponse().read())
        latencies.append(time.perf_counter() - t)
    conn.close()
    return sorted(latencies), size


# The floor: a bare Python HTTP/1.1 server answering every GET with the same bytes, no sampler
# and no gputop, on the same machine at the same time.
FLOOR = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
BODY = sys.stdin.buffer.read()
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
    def log_message(self, *a):
        pass
server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
print("ready", flush=True)
server.serve_forever()
"""


def start_floor(body: bytes) -> tuple[subprocess.Popen, str]:
    from tests.support.ssh_harness import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", FLOOR, str(port)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(body)
    proc.stdin.close()
    proc.stdout.readline()
    return proc, f"127.0.0.1:{port}"


def bench_exporter(seconds: float) -> None:
    exporter = start_exporter("--backend", "sim", "--scenario", "crowded",
                              "--top-processes", "32")
    try:
        proc = psutil.Process(exporter.proc.pid)
        time.sleep(2)
        idle0 = cpu_seconds(proc)
        time.sleep(seconds)
        idle = cpu_seconds(proc) - idle0
        busy0 = cpu_seconds(proc)
        latencies, size = scrape_latencies(exporter.target, seconds, keep_alive=True)
        busy = cpu_seconds(proc) - busy0
        fresh, _ = scrape_latencies(exporter.target, seconds, keep_alive=False)
        floor_proc, floor_target = start_floor(urllib.request.urlopen(
            f"http://{exporter.target}/metrics", timeout=5).read())
        try:
            floor, _ = scrape_latencies(floor_target, seconds, keep_alive=True)
        finally:
            stop(floor_proc)

        def p99(values: list[float]) -> float:
            return values[min(len(values) - 1, int(0.99 * len(values)))]

        print(f"exporter, 8 GPUs × 32 processes, {len(latencies)} scrapes at 1/s "
              f"({size / 1024:.0f} KiB each), one kept-alive connection as Prometheus scrapes: "
              f"latency p50 {statistics.median(latencies) * 1e3:.2f} ms, p99 "
              f"{p99(latencies) * 1e3:.2f} ms; CPU per scrape "
              f"{(busy - idle) / len(latencies) * 1e3:.2f} ms (exporter without scrapes: "
              f"{100 * idle / seconds:.1f}% of one core, with: {100 * busy / seconds:.1f}%)")
        print(f"  a new connection per scrape: p50 {statistics.median(fresh) * 1e3:.2f} ms, "
              f"p99 {p99(fresh) * 1e3:.2f} ms")
        print(f"  floor (a bare Python server sending the same bytes, kept alive, right after): "
              f"p50 {statistics.median(floor) * 1e3:.2f} ms, p99 {p99(floor) * 1e3:.2f} ms")
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
