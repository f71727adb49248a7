"""The measured sweep: set, settle, measure, and the baseline again between steps (A-B-A).

All waiting is on the backend's clock (the simulator's runs faster with --sim-speed) and can be
cancelled through an event. The caller owns the LimitGuard: this module changes limits only
through it, so every change is journaled and undone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from gputop.advisor import curve
from gputop.advisor.curve import Proxy, Row, Window
from gputop.advisor.journal import LimitGuard
from gputop.advisor.recommend import Plan, Recommendation, recommend
from gputop.backends.base import Backend
from gputop.core.errors import GputopError
from gputop.core.model import Snapshot
from gputop.sampler import next_tick


class Cancelled(GputopError):
    """The sweep was cancelled (the advisor screen closed, the user pressed cancel)."""


@dataclass(frozen=True)
class Progress:
    fraction: float  # 0..1 of the worst-case sweep
    phase: str  # "baseline" | "settle" | "measure" | "run" | "done"
    limit_w: float
    step: int  # 0 for the baseline, k for the k-th candidate
    steps: int
    message: str
    rows: tuple[Row, ...] = ()


ProgressFn = Callable[[Progress], None]


@dataclass
class SweepResult:
    plan: Plan
    mode: str  # "sweep" | "benchmark"
    proxy: Proxy | None
    rows: list[Row] = field(default_factory=list)
    stopped: str = ""  # "max-slowdown" | "minimum"
    recommendation: Recommendation | None = None
    baseline_samples: list[Snapshot] = field(default_factory=list)
    command: list[str] | None = None


def measure(backend: Backend, devices: Sequence[int], seconds: float, interval: float,
            cancel: threading.Event, during: str = "during the sweep",
            ok_before: Collection[int] = ()) -> list[Snapshot]:
    """Sample ``devices`` every ``interval`` for ``seconds`` of the backend's clock (both ends);
    a GPU not ok at the end is one error saying ``during`` what (the sweep, the passive view's
    watch) and whether it "became" so (ok in the first sample, or in ``ok_before``: a sweep's
    GPUs were all ok when it began) or already "is"."""
    clock = backend.clock
    samples = [backend.sample(list(devices))]
    start = clock.monotonic()
    k = 0
    while True:
        k, due = next_tick(start, interval, clock.monotonic(), k)
        if due - start > seconds + 1e-9:
            break
        if clock.wait(cancel, due - clock.monotonic()):
            raise Cancelled("cancelled")
        samples.append(backend.sample(list(devices)))
    was_ok = {d.index for d in samples[0].devices if d.status == "ok"} | set(ok_before)
    for dev in samples[-1].devices:
        if dev.status != "ok":
            reason = f" ({dev.status_reason})" if dev.status_reason else ""
            verb = "became" if dev.index in was_ok else "is"
            raise GputopError(f"GPU {dev.index} {verb} {dev.status}{reason} {during}")
    return samples


class Sweep:
    """Runs one sweep. ``run()`` raises Cancelled, GputopError or BackendError on failure; the
    limits are the guard's to restore either way."""

    def __init__(self, backend: Backend, plan: Plan, guard: LimitGuard, *,
                 cancel: threading.Event | None = None, progress: ProgressFn | None = None) -> None:
        self.backend = backend
        self.plan = plan
        self.guard = guard
        self.cancel = cancel or threading.Event()
        self.progress = progress or (lambda p: None)
        self._current: dict[int, float] = dict(plan.originals)
        self._windows_done = 0
        self.rows: list[Row] = []
        self.baseline_samples: list[Snapshot] = []

    # -- helpers
    def _report(self, phase: str, limit: float, step: int, message: str, done: float = 0.0) -> None:
        total = self.plan.max_windows
        fraction = min(1.0, (self._windows_done + done) / total)
        self.progress(Progress(fraction, phase, limit, step, len(self.plan.candidates), message,
                               tuple(self.rows)))

    def _wait(self, seconds: float) -> None:
        if seconds > 0 and self.backend.clock.wait(self.cancel, seconds):
            raise Cancelled("cancelled")

    def _apply(self, limits: Mapping[int, float]) -> bool:
        changes = {i: w for i, w in limits.items() if abs(self._current.get(i, -1) - w) >= 0.01}
        if changes:
            self.guard.set(changes)
            self._current.update(changes)
        return bool(changes)

    def _window(self, limits: Mapping[int, float], step: int, label: str) -> tuple[Window, list[Snapshot]]:
        c = self.plan.config
        watts = max(limits.values())
        phase = "baseline" if label.startswith("baseline") else "measure"
        if self._apply(limits) and c.settle_s > 0:
            self._report("settle", watts, step, f"{label}: settling at {watts:g} W")
            self._wait(c.settle_s)
        self._report(phase, watts, step, f"{label}: measuring at {watts:g} W", 0.5)
        samples = measure(self.backend, self.plan.devices, c.measure_s, c.interval_s, self.cancel,
                          ok_before=self.plan.devices)
        self._windows_done += 1
        return curve.window(samples, self.plan.devices, limits), samples

    # -- the sweep
    def run(self) -> SweepResult:
        plan, c = self.plan, self.plan.config
        base_limits = dict(plan.originals)
        a_prev, a_samples = self._window(base_limits, 0, "baseline")
        self.baseline_samples = a_samples
        try:
            proxy = curve.classify(a_prev)
        except ValueError as exc:
            raise GputopError(str(exc)) from None
        result = SweepResult(plan, "sweep", proxy, baseline_samples=a_samples)
        self.rows.append(curve.baseline_row(a_prev, plan.start_w, plan.max_power_w, c.eta))
        result.stopped = "minimum"
        n = len(plan.candidates)
        for k, watts in enumerate(plan.candidates, 1):
            b, _ = self._window(plan.limits_for(watts), k, f"step {k}/{n}")
            a_next, _ = self._window(base_limits, k, f"baseline after step {k}")
            try:
                row = curve.step_row(watts, a_prev, b, a_next, proxy, plan.max_power_w, c.eta)
            except ValueError as exc:
                raise GputopError(str(exc)) from None
            self.rows.append(row)
            a_prev = a_next
            if row.slowdown_pct > c.max_slowdown_pct:
                result.stopped = "max-slowdown"
                break
        result.rows = list(self.rows)
        result.recommendation = recommend(result.rows, c.max_slowdown_pct, c.eta)
        self._windows_done = plan.max_windows
        self._report("done", plan.start_w, len(plan.candidates), "sweep finished")
        return result
