"""Benchmark mode: run the user's own command once per limit and time it.

Slowdown comes from the wall-time ratio against the baseline runs, as the share of throughput
lost (1 - t_baseline / t, the sweep's definition too) (one before the candidates and one
after them, so a drifting machine shows up as spread); energy comes from the counter, summed over
the selected GPUs, as in Dettmers' power-limit measurements. The command runs without a shell
(argv from shlex.split).
"""

from __future__ import annotations

import statistics
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO

from gputop.advisor.curve import Row, zeus_cost
from gputop.advisor.journal import LimitGuard
from gputop.advisor.recommend import Plan, recommend
from gputop.advisor.sweep import Cancelled, Progress, ProgressFn, SweepResult
from gputop.backends.base import Backend
from gputop.core.errors import GputopError
from gputop.core.model import Snapshot

KILL_GRACE_S = 5.0


class RunResult:
    def __init__(self, wall_s: float, energy_j: float | None, power_w: float | None,
                 samples: list[Snapshot]) -> None:
        self.wall_s = wall_s
        self.energy_j = energy_j
        self.power_w = power_w
        self.samples = samples


def _energy(snap: Snapshot) -> float | None:
    values = [d.energy_j for d in snap.devices]
    return None if not values or None in values else sum(v for v in values if v is not None)


def stop_child(proc: subprocess.Popen) -> None:
    """Terminate a child we started (SIGTERM, then SIGKILL after a grace period)."""
    if proc.poll() is not None:
        return
    try:
        proc.terminate()
        proc.wait(KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except OSError:
        pass


def run_once(backend: Backend, devices: Sequence[int], argv: Sequence[str], interval: float,
             cancel: threading.Event, output: int | IO | None) -> RunResult:
    """Run ``argv`` to completion, sampling the devices meanwhile on the backend's clock."""
    first = backend.sample(list(devices))
    samples = [first]
    ended = threading.Event()
    end: list[float] = []
    start = time.monotonic()
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=output, stderr=output)
    except OSError as exc:
        raise GputopError(f"cannot run the benchmark command {argv[0]!r}: {exc.strerror}") from None

    def watch() -> None:
        # Time the exit exactly, and wake the sampling wait below at once.
        proc.wait()
        end.append(time.monotonic())
        ended.set()

    threading.Thread(target=watch, name="gputop-benchmark", daemon=True).start()
    try:
        # Waiting on the backend's clock keeps the simulator's time (and energy) flowing.
        while not backend.clock.wait(ended, interval):
            if cancel.is_set():
                raise Cancelled("cancelled")
            samples.append(backend.sample(list(devices)))
    finally:
        stop_child(proc)
    ended.wait()
    wall = end[0] - start
    last = backend.sample(list(devices))
    samples.append(last)
    if proc.returncode != 0:
        raise GputopError(f"the benchmark command exited with status {proc.returncode}")
    e0, e1 = _energy(first), _energy(last)
    energy = e1 - e0 if e0 is not None and e1 is not None else None
    duration = last.time - first.time
    power = energy / duration if energy is not None and duration > 0 else None
    if power is None:
        draws = [sum(d.power_draw_w or 0.0 for d in s.devices) for s in samples]
        power = statistics.fmean(draws) if draws else None
    return RunResult(wall, energy, power, samples)


class Benchmark:
    def __init__(self, backend: Backend, plan: Plan, guard: LimitGuard, argv: Sequence[str], *,
                 cancel: threading.Event | None = None, progress: ProgressFn | None = None,
                 output: int | IO | None = None) -> None:
        if not argv:
            raise GputopError("--run needs a command")
        self.backend = backend
        self.plan = plan
        self.guard = guard
        self.argv = list(argv)
        self.cancel = cancel or threading.Event()
        self.progress = progress or (lambda p: None)
        self.output = output if output is not None else subprocess.DEVNULL
        self._current: dict[int, float] = dict(plan.originals)
        self._done = 0
        self.rows: list[Row] = []
        self.baseline_samples: list[Snapshot] = []

    def _report(self, phase: str, limit: float, step: int, message: str) -> None:
        total = len(self.plan.candidates) + 2
        self.progress(Progress(min(1.0, self._done / total), phase, limit, step,
                               len(self.plan.candidates), message, tuple(self.rows)))

    def _runs(self, limits: Mapping[int, float], step: int, label: str) -> list[RunResult]:
        c = self.plan.config
        changes = {i: w for i, w in limits.items() if abs(self._current[i] - w) >= 0.01}
        watts = max(limits.values())
        if changes:
            self.guard.set(changes)
            self._current.update(changes)
            self._report("settle", watts, step, f"{label}: settling at {watts:g} W")
            if c.settle_s > 0 and self.backend.clock.wait(self.cancel, c.settle_s):
                raise Cancelled("cancelled")
        out = []
        for r in range(c.repeat):
            self._report("run", watts, step, f"{label}: running the command at {watts:g} W"
                         + (f" ({r + 1}/{c.repeat})" if c.repeat > 1 else ""))
            try:
                out.append(run_once(self.backend, self.plan.devices, self.argv, c.interval_s,
                                    self.cancel, self.output))
            except GputopError as exc:
                if isinstance(exc, Cancelled):
                    raise
                raise GputopError(f"{exc} at {watts:g} W") from None
        self._done += 1
        return out

    def run(self) -> SweepResult:
        plan, c = self.plan, self.plan.config
        base = dict(plan.originals)
        first = self._runs(base, 0, "baseline")
        self.baseline_samples = first[0].samples
        result = SweepResult(plan, "benchmark", None, baseline_samples=first[0].samples,
                             command=self.argv)
        measured: list[tuple[float, Mapping[int, float], list[RunResult]]] = []
        result.stopped = "minimum"
        n = len(plan.candidates)
        for k, watts in enumerate(plan.candidates, 1):
            limits = plan.limits_for(watts)
            runs = self._runs(limits, k, f"step {k}/{n}")
            measured.append((watts, limits, runs))
            t_base = statistics.fmean(r.wall_s for r in first)
            if 100.0 * (1.0 - t_base / statistics.fmean(r.wall_s for r in runs)) > c.max_slowdown_pct:
                result.stopped = "max-slowdown"
                break
        last = self._runs(base, 0, "baseline again") if measured else first
        self.rows = rows_from_runs(plan, first, last, measured)
        result.rows = list(self.rows)
        result.recommendation = recommend(result.rows, c.max_slowdown_pct, c.eta)
        self._done = n + 2
        self._report("done", plan.start_w, n, "benchmark finished")
        return result


def rows_from_runs(plan: Plan, first: list[RunResult], last: list[RunResult],
                   measured: Sequence[tuple[float, Mapping[int, float], list[RunResult]]]) -> list[Row]:
    eta = plan.config.eta
    baseline = first + (last if last is not first else [])
    t_a = statistics.fmean(r.wall_s for r in baseline)
    # Spread of the baseline: the drift between its runs, as a share of its time.
    if len(baseline) > 1:
        drift = statistics.stdev(r.wall_s for r in baseline) / t_a
    else:
        drift = 0.0
    e_values = [r.energy_j for r in baseline]
    e_a = statistics.fmean(e for e in e_values if e is not None) if None not in e_values else None
    p_values = [r.power_w for r in baseline]
    p_a = statistics.fmean(p for p in p_values if p is not None) if None not in p_values else None

    def cost(energy: float | None, t: float) -> float | None:
        return zeus_cost(energy, t, plan.max_power_w, eta) if energy is not None else None

    rows = [Row(
        limit_w=plan.start_w, limits=dict(plan.originals), power_w=p_a, saved_w=0.0 if p_a else None,
        energy_j=e_a, rate=1.0, slowdown_pct=0.0, spread_pct=100.0 * drift if len(baseline) > 1 else None,
        energy_per_work_j=e_a, energy_change_pct=0.0 if e_a else None,
        perf_per_w=1.0 if e_a else None, cost=cost(e_a, t_a), time_s=t_a,
    )]
    for watts, limits, runs in measured:
        t = statistics.fmean(r.wall_s for r in runs)
        own = statistics.stdev(r.wall_s for r in runs) / t / (len(runs) ** 0.5) if len(runs) > 1 else 0.0
        es = [r.energy_j for r in runs]
        e = statistics.fmean(x for x in es if x is not None) if None not in es else None
        ps = [r.power_w for r in runs]
        p = statistics.fmean(x for x in ps if x is not None) if None not in ps else None
        rows.append(Row(
            limit_w=watts, limits=dict(limits), power_w=p,
            saved_w=(p_a - p) if p_a is not None and p is not None else None,
            energy_j=e, rate=t_a / t, slowdown_pct=100.0 * (1.0 - t_a / t),
            spread_pct=100.0 * (t_a / t) * (own**2 + drift**2) ** 0.5,
            energy_per_work_j=e,
            energy_change_pct=100.0 * (e / e_a - 1.0) if e is not None and e_a else None,
            perf_per_w=(e_a / e) if e and e_a else None,
            cost=cost(e, t), time_s=t,
        ))
    return rows

