"""What the sampler's history costs: bytes held with the ring full, and time per sample, at
8 GPUs x 32 processes and 16 x 1024, beside the 600 whole snapshots it replaced, in one run.

Synthetic snapshots shaped like a training node's (every process on one GPU, CPU% changing each
sample, as a real one does): the history is filled with the frames of an hour (``--history 100``
at 0.1 s holds exactly as many as an hour at 1 s: the span only widens the buckets).

    python bench/history.py
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gputop.core.model import Device, Process, Snapshot  # noqa: E402
from gputop.history import History  # noqa: E402

SAMPLES = 1300  # past --history 100 at 0.1 s: every tier full
BEFORE = 600  # the whole snapshots the sampler kept before


def snapshot(t: float, gpus: int, per_gpu: int) -> Snapshot:
    devices = []
    for g in range(gpus):
        procs = tuple(Process(pid=10_000 + g * per_gpu + i, name="python", user="ana",
                              command="python train.py --rank 0", gpu_memory_mib=30_000.0 + i,
                              sm_pct=float((t * 10 + i) % 100), cpu_pct=float((t * 37 + i) % 400),
                              host_memory_mib=8_000.0 + t, started=1.0 + i)
                      for i in range(per_gpu))
        devices.append(Device(index=g, name="NVIDIA H100 80GB HBM3", uuid=f"GPU-{g}",
                              utilization_gpu_pct=float((t + g) % 100), memory_used_mib=60_000.0,
                              memory_total_mib=81_559.0, power_draw_w=500.0 + t % 100,
                              power_limit_w=700.0, energy_j=1e9 + t * 600,
                              clock_sm_mhz=1980.0, clock_sm_max_mhz=1980.0,
                              clock_event_reasons=(), processes=procs))
    return Snapshot(host="node", time=t, backend="nvml", devices=tuple(devices))


def traced(fill) -> tuple[float, float]:
    """(MB held once ``fill`` is done, µs per sample)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    spent = fill()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return held / 1e6, spent


def main() -> int:
    print(f"the history full (the frames of 1 h at 1 s) beside {BEFORE} whole snapshots;"
          f" {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    print(f"  {'node':<22}{'history MB':>12}{'of it columns':>15}{'µs / sample':>13}"
          f"{f'{BEFORE} snapshots MB':>19}{'ratio':>8}")
    for gpus, per_gpu in ((8, 4), (16, 64)):
        history = History(span_s=100.0, interval=0.1)

        def fill_history(history=history, gpus=gpus, per_gpu=per_gpu) -> float:
            spent = 0.0
            for k in range(SAMPLES):  # built here, so that what the window holds is counted
                s = snapshot(k * 0.1, gpus, per_gpu)
                t0 = time.perf_counter()
                history.append(s)
                spent += time.perf_counter() - t0
            return spent / SAMPLES * 1e6

        mb, _ = traced(fill_history)
        us = fill_history(History(span_s=100.0, interval=0.1))  # timed without tracemalloc
        ring: deque = deque(maxlen=BEFORE)

        def fill_ring(ring=ring, gpus=gpus, per_gpu=per_gpu) -> float:
            for k in range(BEFORE):
                ring.append(snapshot(k * 0.1, gpus, per_gpu))
            return 0.0

        before, _ = traced(fill_ring)
        name = f"{gpus} GPUs x {gpus * per_gpu} processes"
        print(f"  {name:<22}{mb:>12.2f}{history.nbytes() / 1e6:>15.2f}{us:>13.0f}"
              f"{before:>19.2f}{mb / before:>7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
