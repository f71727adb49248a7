"""`gputop web` cost: the server and its viewers' app processes, with 1 and 5 viewers of the
dashboard (simulator, 8 GPUs, 1 s) and 1 viewer of the SSH cluster view of 16 loopback nodes.

Viewers are websocket clients that read everything the app sends (what a browser's tab costs
the server; the browser's own cost is on the viewer's machine). Prints, per case: CPU of the
server process, of the app processes (and, for the cluster, their ssh clients), as % of one
core over the window after a warm-up, and their RSS (the ssh clients' USS: they share their
libraries). CPU time is read per process in the kernel's 10 ms ticks, so a process that used less
than that in the window counts 0. Beside them, the floor: the same dashboard in a terminal (tmux,
as bench/tui.py runs it), which is what one viewer's app process does.

Usage: python bench/web.py [--seconds 20] [--warmup 5] [--no-floor]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import aiohttp  # noqa: E402
import psutil  # noqa: E402
from tui import run_in_tmux  # noqa: E402

from tests.support.web_server import start_web  # noqa: E402

DASHBOARD = ["--backend", "sim", "--interval", "1"]


def tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def cpu(procs: list[psutil.Process]) -> dict[int, float]:
    out = {}
    for p in procs:
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
        except psutil.Error:
            pass
    return out


def kind(p: psutil.Process, server_pid: int) -> str:
    if p.pid == server_pid:
        return "server"
    try:
        return "ssh" if p.name() == "ssh" else "apps"
    except psutil.Error:
        return "apps"


async def drain(ws) -> None:
    async for _ in ws:
        pass


async def measure(url: Callable[[str], str], server_pid: int, viewers: int, seconds: float, warmup: float) -> dict:
    async with aiohttp.ClientSession() as http:
        sockets = [await http.ws_connect(url("ws?width=120&height=40"), max_msg_size=0)
                   for _ in range(viewers)]
        readers = [asyncio.create_task(drain(ws)) for ws in sockets]
        await asyncio.sleep(warmup)
        procs = tree(server_pid)
        before, t0 = cpu(procs), time.monotonic()
        await asyncio.sleep(seconds)
        after, elapsed = cpu(procs), time.monotonic() - t0
        result: dict[str, float] = {}
        for p in procs:
            k = kind(p, server_pid)
            if p.pid in before and p.pid in after:
                result[f"{k} cpu"] = result.get(f"{k} cpu", 0.0) + \
                    100 * (after[p.pid] - before[p.pid]) / elapsed
            try:
                # USS for the ssh clients, as bench/cluster.py counts them.
                mem = p.memory_full_info().uss if k == "ssh" else p.memory_info().rss
                result[f"{k} MB"] = result.get(f"{k} MB", 0.0) + mem / 1e6
            except psutil.Error:
                pass
        for ws in sockets:
            await ws.close()
        for r in readers:
            r.cancel()
        return result


def cluster_hosts(tmp: Path, n: int):
    """The served arguments of a cluster view of n loopback nodes, and the sshd they reach."""
    from tests.support.ssh_harness import (
        Alias,
        SshServer,
        agent_command,
        keygen,
        toml_hosts,
        write_ssh_config,
    )

    pub = keygen(tmp / "id")
    sshd = SshServer(tmp / "sshd", pub)
    sshd.start()
    known = tmp / "known"
    known.write_text(sshd.known_hosts_line() + "\n")
    names = [f"node{i:02d}" for i in range(n)]
    config = write_ssh_config(tmp / "ssh_config", [Alias(m, sshd, tmp / "id", known)
                                                   for m in names])
    hosts = toml_hosts(tmp / "hosts.toml", [(m, agent_command("training", 1.0, seed=i))
                                            for i, m in enumerate(names)])
    return ["--", "cluster", "--hosts", str(hosts), "--ssh-config", str(config)], sshd


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--no-floor", action="store_true", help="skip the dashboard in a terminal")
    args = ap.parse_args()
    print(f"load average before: {psutil.getloadavg()[0]:.1f}, {psutil.cpu_count()} CPUs")
    cases = [("dashboard, 1 viewer", 1, None), ("dashboard, 5 viewers", 5, None),
             ("cluster, 16 nodes, 1 viewer", 1, 16)]
    with tempfile.TemporaryDirectory() as tmp:
        for name, viewers, nodes in cases:
            extra, sshd = cluster_hosts(Path(tmp), nodes) if nodes else (DASHBOARD, None)
            server = start_web("--max-viewers", "8", *extra)
            try:
                r = asyncio.run(measure(server.with_token, server.proc.pid, viewers,
                                        args.seconds, args.warmup + (10 if nodes else 0)))
            finally:
                server.stop()
                if sshd is not None:
                    sshd.kill()
            per = f" ({r.get('apps cpu', 0) / viewers:.2f}% per app)" if viewers > 1 else ""
            ssh = (f", ssh clients {r.get('ssh cpu', 0):.2f}% / {r.get('ssh MB', 0):.0f} MB"
                   if nodes else "")
            print(f"{name}: server {r.get('server cpu', 0):.2f}% CPU, "
                  f"{r.get('server MB', 0):.0f} MB; app processes {r.get('apps cpu', 0):.2f}%"
                  f"{per}, {r.get('apps MB', 0):.0f} MB{ssh}", flush=True)
    if not args.no_floor:
        floor = run_in_tmux([sys.executable, "-m", "gputop", *DASHBOARD], (120, 40),
                            args.seconds, ready="gputop", data="PID")
        print(f"floor, the same dashboard in a terminal (tmux 120x40): {floor['cpu_pct']:.2f}% "
              f"CPU, {floor['rss_mb']:.0f} MB peak RSS")
    print(f"load average after: {psutil.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
