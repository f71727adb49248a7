"""Cluster view at scale: N node aliases on one loopback sshd, each running the agent at 1 s.

Prints, per N (32 and 64 by default):
- viewer CPU: the viewer process alone (the I/O thread, decoding and validation of every
  snapshot, and with --tui the Textual cluster screen running headless), as % of one core;
- ssh clients CPU: the N `ssh` processes the viewer runs (separate processes);
- remote side CPU: sshd sessions + agents (on a real cluster that load is spread over the nodes);
- update latency: from the agent's sample time to the viewer holding the decoded snapshot;
- memory: viewer RSS and the ssh clients' total RSS.

Usage: python bench/cluster.py [--nodes 32 64] [--seconds 20] [--interval 1] [--tui]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from gputop.cluster.hosts import HostSpec  # noqa: E402
from gputop.cluster.node import Policy  # noqa: E402
from gputop.cluster.transport import Cluster  # noqa: E402
from tests.support.ssh_harness import (  # noqa: E402
    Alias,
    SshServer,
    agent_command,
    find_sshd,
    keygen,
    write_ssh_config,
)


def cpu_seconds(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def rss_mib(procs: list[psutil.Process], unique: bool = False) -> float:
    """RSS, or with ``unique`` USS (pages only that process holds: the ssh clients share their
    libraries, which RSS would count once per client)."""
    total = 0
    for p in procs:
        try:
            total += p.memory_full_info().uss if unique else p.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


def run(n: int, seconds: float, interval: float, scenario: str, tui: bool, tmp: Path) -> dict:
    pub = keygen(tmp / f"id{n}")
    server = SshServer(tmp / f"sshd{n}", pub)
    server.start()
    known = tmp / f"known{n}"
    known.write_text(server.known_hosts_line() + "\n")
    names = [f"node{i:03d}" for i in range(n)]
    config = write_ssh_config(tmp / f"ssh_config{n}",
                              [Alias(name, server, tmp / f"id{n}", known) for name in names])
    specs = [HostSpec(name, agent_command(scenario, interval, seed=i))
             for i, name in enumerate(names)]
    cluster = Cluster(specs, Policy(interval=interval, connect_timeout=10),
                      ssh_config=str(config), max_opening=8)
    me = psutil.Process()
    app_ctx = None
    try:
        t0 = time.monotonic()
        cluster.start()
        if tui:
            app_ctx = start_tui(cluster)
        ok = cluster.wait(lambda ss: all(s.state == "ok" for s in ss), 120)
        connect_s = time.monotonic() - t0
        if not ok:
            states = {}
            for s in cluster.statuses():
                states[s.state] = states.get(s.state, 0) + 1
            raise SystemExit(f"{n} nodes: not all ok after 120 s: {states}")
        time.sleep(3 * interval)  # warm-up: first samples, JIT-less steady state
        ssh_procs = [p for p in me.children() if p.name() == "ssh"]
        remote = psutil.Process(server.proc.pid).children(recursive=True)
        latencies: list[float] = []
        seen: dict[str, int] = {}
        v0 = os.times()
        s0 = cpu_seconds(ssh_procs)
        r0 = cpu_seconds(remote)
        w0 = time.monotonic()
        while time.monotonic() - w0 < seconds:
            time.sleep(interval / 4)
            mono, wall = time.monotonic(), time.time()
            for s in cluster.statuses():
                if s.summary is not None and seen.get(s.host) != s.seq:
                    seen[s.host] = s.seq
                    received_wall = wall - (mono - s.received)
                    latencies.append(received_wall - s.summary.time)
        wall_s = time.monotonic() - w0
        v1 = os.times()
        viewer = (v1.user + v1.system - v0.user - v0.system) / wall_s * 100
        ssh_cpu = (cpu_seconds(ssh_procs) - s0) / wall_s * 100
        remote_cpu = (cpu_seconds(remote) - r0) / wall_s * 100
        states = [s.state for s in cluster.statuses()]
        latencies.sort()
        return {
            "nodes": n, "connect_s": connect_s, "viewer_pct": viewer, "ssh_pct": ssh_cpu,
            "remote_pct": remote_cpu, "updates": len(latencies),
            "lat_p50_ms": 1000 * statistics.median(latencies),
            "lat_p95_ms": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
            "lat_max_ms": 1000 * latencies[-1],
            "viewer_rss_mib": rss_mib([me]), "ssh_rss_mib": rss_mib(ssh_procs, unique=True),
            "ok": states.count("ok"),
        }
    finally:
        if app_ctx is not None:
            stop_tui(app_ctx)
        cluster.stop()
        server.kill()


def start_tui(cluster: Cluster):
    """The cluster screen, headless, in a thread: its refresh work counts as viewer CPU."""
    import asyncio
    import threading

    from gputop.tui.cluster import ClusterApp

    app = ClusterApp(cluster, interval=cluster.policy.interval)
    ready = threading.Event()

    def main() -> None:
        async def go() -> None:
            async with app.run_test(headless=True, size=(160, 80)):
                ready.set()
                while not app._exit:
                    await asyncio.sleep(0.2)
        asyncio.run(go())

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    ready.wait(30)
    return app, thread


def stop_tui(ctx) -> None:
    app, thread = ctx
    app.call_from_thread(app.exit)
    thread.join(10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[32, 64])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--scenario", default="training", help="each agent's simulator scenario")
    parser.add_argument("--tui", action="store_true", help="also run the cluster screen headless")
    args = parser.parse_args()
    if find_sshd() is None:
        print("bench/cluster.py needs sshd: apt-get install openssh-server", file=sys.stderr)
        return 2
    print(f"cluster bench: {args.scenario} agents at {args.interval:g} s, "
          f"{args.seconds:g} s measured, {'TUI headless' if args.tui else 'core viewer'}, "
          f"{os.cpu_count()} CPUs")
    print(f"{'nodes':>5} {'ok':>4} {'connect':>8} {'viewer':>7} {'ssh':>7} {'viewer+ssh':>10} "
          f"{'remote':>7} {'lat p50':>8} {'p95':>7} {'max':>7} {'viewer RSS':>10} {'ssh USS':>8}")
    with tempfile.TemporaryDirectory(prefix="gputop-bench-cluster-") as tmp:
        for n in args.nodes:
            r = run(n, args.seconds, args.interval, args.scenario, args.tui, Path(tmp))
            print(f"{r['nodes']:>5} {r['ok']:>4} {r['connect_s']:>7.1f}s {r['viewer_pct']:>6.1f}%"
                  f" {r['ssh_pct']:>6.1f}% {r['viewer_pct'] + r['ssh_pct']:>9.1f}%"
                  f" {r['remote_pct']:>6.1f}% {r['lat_p50_ms']:>6.0f}ms {r['lat_p95_ms']:>5.0f}ms"
                  f" {r['lat_max_ms']:>5.0f}ms {r['viewer_rss_mib']:>8.0f}MiB"
                  f" {r['ssh_rss_mib']:>6.0f}MiB", flush=True)
    print("viewer = this process (% of one core); ssh = its ssh clients; remote = sshd sessions"
          " + agents (spread over the nodes on a real cluster); latency = agent sample time to"
          " the viewer holding it; ssh USS = memory only the ssh clients hold.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
