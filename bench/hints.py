"""Per-tick cost of the hints analyzer on a full dashboard history (600 snapshots).

Prints the median time of one `default_analyzer()` call for 8 and 16 GPUs, next to the same
analysis run over the whole history (what a naive rescan would cost), as a ratio.
Run: python bench/hints.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

from gputop.analysis import hints  # noqa: E402
from gputop.analysis.pipeline import default_analyzer  # noqa: E402
from gputop.backends.base import BackendOptions  # noqa: E402
from gputop.backends.sim.backend import SimBackend  # noqa: E402
from gputop.sampler import Sampler  # noqa: E402


def history_of(scenario: str, n: int = 600):
    backend = SimBackend(BackendOptions(scenario=scenario, sim_speed=1e7))
    backend.open()
    window = []
    sampler = Sampler(backend, interval=1.0)
    sampler.subscribe(window.append)
    sampler.run_for(n - 1)
    backend.close()
    return window


def timeit(fn, repeat: int = 30) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    analyze = default_analyzer()
    for scenario in ("straggler", "mixed", "dense-16"):
        hist = history_of(scenario)
        gpus = len(hist[-1].devices)
        bounded = timeit(lambda h=hist: analyze(h))
        saved = hints.WINDOW_S, hints.WINDOW_MAX_SAMPLES
        hints.WINDOW_S, hints.WINDOW_MAX_SAMPLES = 1e9, 10**9  # naive: rescan everything
        try:
            full = timeit(lambda h=hist: analyze(h), repeat=10)
        finally:
            hints.WINDOW_S, hints.WINDOW_MAX_SAMPLES = saved
        print(f"{scenario:16} {gpus:2d} GPUs, {len(hist)} snapshots: "
              f"{1000 * bounded:6.2f} ms per tick (bounded window), "
              f"{1000 * full:6.2f} ms full rescan, ratio {full / bounded:4.1f}x")


if __name__ == "__main__":
    main()
