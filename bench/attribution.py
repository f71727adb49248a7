"""What attribution (container, pod, Slurm job, namespace PID per GPU process) adds to a tick:
8 GPUs x 32 processes (256 real `sleep` processes, half of them in cgroups named as Docker and
Slurm name theirs when run as root with a writable cgroup hierarchy), NVML backend on the fake
pynvml, with attribution on and with it replaced by a no-op, in the same run.

- steady: every tick after the first (attribution is read once per (PID, start time), so a
  steady tick only pays for the cache look-up);
- first sight: a tick where all 256 processes are new (a fresh backend each time);
- the dashboard's first tick: that sample and its first render (headless, 160x50), the tick a
  user of the dashboard waits for, with attribution's own time inside it;
- the floor of the first-sight tick: the 256 reads of ``/proc/PID/cgroup`` alone, back to back, that any
  attribution from the kernel (as the issue asks it) must make once per process.

    python bench/attribution.py [--ticks N] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gputop.backends.base import BackendOptions  # noqa: E402
from gputop.backends.nvml.backend import NvmlBackend  # noqa: E402
from gputop.host.attribution import NO_OWNER, Attribution  # noqa: E402
from gputop.host.processes import HostProcesses  # noqa: E402
from tests.support.fake_pynvml import FakeNvml, ManualClock, node  # noqa: E402

GPUS, PER_GPU = 8, 32


class TimedAttribution(Attribution):
    """Attribution that also counts its own time: a figure machine noise cannot blur."""

    spent = 0.0

    def owner(self, pid, host_pid=None, status=None):
        start = time.perf_counter()
        try:
            return super().owner(pid, host_pid, status)
        finally:
            TimedAttribution.spent += time.perf_counter() - start


class NoAttribution(Attribution):
    def owner(self, pid, host_pid=None, status=None):
        return NO_OWNER


def backend(pids, attribution):
    clock = ManualClock(t=0.0)
    nv = FakeNvml(node(GPUS, PER_GPU, pids=pids), clock=clock.wall)
    b = NvmlBackend(BackendOptions(), nvml=nv, clock=clock, host=HostProcesses(attribution))
    b.open()
    return b, clock


def steady_us(pids, attribution, ticks: int) -> float:
    b, clock = backend(pids, attribution)
    b.sample()
    TimedAttribution.spent = 0.0  # count only the steady ticks
    start = time.perf_counter()
    for _ in range(ticks):
        clock.t += 1.0
        b.sample()
    out = (time.perf_counter() - start) / ticks * 1e6
    b.close()
    return out


def first_sight_us(pids, attribution) -> float:
    b, clock = backend(pids, attribution)
    start = time.perf_counter()
    b.sample()
    out = (time.perf_counter() - start) * 1e6
    b.close()
    return out


def dashboard_first_tick_ms(pids) -> tuple[float, float]:
    """(the dashboard's first tick: the first sample and its first render, headless; the
    attribution's own time in it), in ms."""
    import asyncio

    from gputop.tui.app import GputopApp

    async def tick() -> tuple[float, float]:
        b, _ = backend(pids, TimedAttribution())
        app = GputopApp(b, autostart=False)
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            TimedAttribution.spent = 0.0
            start = time.perf_counter()
            app.show_snapshot(b.sample())
            await pilot.pause()
            return (time.perf_counter() - start) * 1e3, TimedAttribution.spent * 1e3

    return asyncio.run(tick())


def cgroup_reads_us(pids) -> float:
    """The plainest read of each process's cgroup file: open, one read, close."""
    start = time.perf_counter()
    for pid in pids:
        fd = os.open(f"/proc/{pid}/cgroup", os.O_RDONLY)
        try:
            os.read(fd, 65536)
        finally:
            os.close(fd)
    return (time.perf_counter() - start) * 1e6


def place_in_cgroups(pids) -> list[Path]:
    """Half the processes into Docker- and Slurm-named cgroups, where this may (root, v1 or v2
    hierarchy writable); the folders are removed at the end."""
    try:
        from tests.support.kernel_lab import Lab
        lab = Lab()
    except (ImportError, RuntimeError):
        return []
    for k, pid in enumerate(pids[: len(pids) // 2]):
        where = (f"docker/{k:064x}" if k % 2 else f"slurm/uid_0/job_{4000 + k // 8}/step_0")
        lab.place(pid, where)
    return lab


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    procs = [subprocess.Popen(["sleep", "600"]) for _ in range(GPUS * PER_GPU)]
    pids = [p.pid for p in procs]
    lab = place_in_cgroups(pids)
    try:
        on, off, cold_on, cold_off, reads = [], [], [], [], []
        for run in range(args.runs):  # interleaved, in alternating order: noise hits both alike
            for attribution in ((NoAttribution, Attribution), (Attribution, NoAttribution))[run % 2]:
                steady = steady_us(pids, attribution(), args.ticks)
                cold = first_sight_us(pids, attribution())
                (on if attribution is Attribution else off).append(steady)
                (cold_on if attribution is Attribution else cold_off).append(cold)
            reads.append(cgroup_reads_us(pids))
        own_steady, own_cold = [], []
        for _ in range(args.runs):
            tick = steady_us(pids, TimedAttribution(), args.ticks)
            own_steady.append(TimedAttribution.spent / args.ticks * 1e6 / tick * 100)
            TimedAttribution.spent = 0.0
            tick = first_sight_us(pids, TimedAttribution())
            own_cold.append(TimedAttribution.spent * 1e6 / tick * 100)
        dashboard = [dashboard_first_tick_ms(pids) for _ in range(args.runs)]
        m = statistics.median
        print(f"{GPUS} GPUs x {PER_GPU} processes, {len(lab.folders) if lab else 0} cgroup folders, "
              f"median of {args.runs} runs")
        print(f"steady tick:      {m(off):8.0f} us without attribution, {m(on):8.0f} us with: "
              f"{(m(on) / m(off) - 1) * 100:+.1f}%")
        print(f"first-sight tick: {m(cold_off):8.0f} us without attribution, {m(cold_on):8.0f} us "
              f"with: {(m(cold_on) / m(cold_off) - 1) * 100:+.1f}%")
        print(f"attribution's own share of a tick, timed inside it: steady {m(own_steady):.2f}%, "
              f"first sight {m(own_cold):.1f}%")
        shares = [own / whole * 100 for whole, own in dashboard]
        print(f"the dashboard's first tick (sample and first render): "
              f"{m(w for w, _ in dashboard):.0f} ms, attribution's own share {m(shares):.1f}%")
        print(f"floor: the {len(pids)} cgroup file reads alone, back to back: {m(reads):.0f} us, "
              f"{m(reads) / m(cold_off) * 100:.1f}% of the first-sight tick without attribution")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        if lab:
            lab.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
