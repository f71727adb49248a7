"""Per-tick cost of the hints analyzer on a full dashboard history (600 samples).

Prints the median time of one `default_analyzer()` call, which reads the history's window (typed
columns), for 8 and 16 GPUs, next to the same analysis run over all 600 snapshots (what a naive
rescan would cost), as a ratio.
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
from gputop.analysis.xid import XidLog  # noqa: E402
from gputop.backends.base import BackendOptions  # noqa: E402
from gputop.backends.sim.backend import SimBackend  # noqa: E402
from gputop.core.model import Snapshot  # noqa: E402
from gputop.history import History  # noqa: E402
from gputop.sampler import Sampler  # noqa: E402


def history_of(scenario: str, n: int = 600) -> tuple[History, list[Snapshot]]:
    """The sampler's history after ``n`` samples, and the snapshots it took, oldest first."""
    backend = SimBackend(BackendOptions(scenario=scenario, sim_speed=1e7))
    backend.open()
    taken: list[Snapshot] = []
    sampler = Sampler(backend, interval=1.0)
    sampler.subscribe(taken.append)
    sampler.run_for(n - 1)
    backend.close()
    return sampler.history, taken


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
        hist, taken = history_of(scenario)
        gpus = len(taken[-1].devices)
        bounded = timeit(lambda h=hist: analyze(h))
        runs, xids = hints.IdleRuns.over(taken), XidLog()
        xids.extend(taken)
        saved = hints.WINDOW_S, hints.WINDOW_MAX_SAMPLES
        hints.WINDOW_S, hints.WINDOW_MAX_SAMPLES = 1e9, 10**9  # naive: rescan everything
        try:
            full = timeit(lambda t=taken, r=runs, x=xids: hints.analyze(t, r, x), repeat=10)
        finally:
            hints.WINDOW_S, hints.WINDOW_MAX_SAMPLES = saved
        print(f"{scenario:16} {gpus:2d} GPUs, {len(taken)} samples: "
              f"{1000 * bounded:6.2f} ms per tick (bounded window), "
              f"{1000 * full:6.2f} ms full rescan, ratio {full / bounded:4.1f}x")


if __name__ == "__main__":
    main()
