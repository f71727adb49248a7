"""Which limits to try, and which one to recommend: pure functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop.core.model import Device

if TYPE_CHECKING:  # a type only: a plan is made without the curve's module
    from gputop.advisor.curve import Row

MIN_STEP_W = 25.0
STEP_SHARE = 0.05


def default_step(default_limit_w: float | None) -> float:
    """25 W or 5% of the default limit, whichever is larger (whole watts).

    The larger of the two keeps a sweep of a 700 W part to a dozen steps (35 W) while a 250-400 W
    part still moves in 25 W steps, the size of the effect worth measuring.
    """
    if not default_limit_w:
        return MIN_STEP_W
    return float(max(MIN_STEP_W, round(STEP_SHARE * default_limit_w)))


def candidate_limits(start_w: float, floor_w: float, step_w: float) -> list[float]:
    """Limits below ``start_w`` in ``step_w`` steps, ending at ``floor_w`` (not repeating it
    when the last step lands within half a step of it)."""
    if step_w <= 0:
        raise ValueError("step must be positive")
    out: list[float] = []
    w = start_w - step_w
    while w - floor_w >= step_w / 2:
        out.append(round(w, 1))
        w -= step_w
    if start_w - floor_w > 1e-6:
        out.append(round(floor_w, 1))
    return out


@dataclass(frozen=True)
class SweepConfig:
    step_w: float | None = None  # None: default_step of the devices' default limit
    settle_s: float = 10.0
    measure_s: float = 20.0
    interval_s: float = 1.0
    max_slowdown_pct: float = 5.0
    eta: float = 0.5
    lowest_w: float | None = None  # never go below this (besides each device's minimum)
    repeat: int = 1  # benchmark mode: runs of the command per limit


@dataclass(frozen=True)
class Plan:
    devices: tuple[int, ...]
    uuids: Mapping[int, str | None]
    names: Mapping[int, str | None]
    originals: Mapping[int, float]
    minimums: Mapping[int, float]
    max_power_w: float  # sum of the devices' maximum limits: Zeus' price of time
    candidates: tuple[float, ...]
    step_w: float
    config: SweepConfig = field(default_factory=SweepConfig)

    def limits_for(self, watts: float) -> dict[int, float]:
        """Each GPU's limit for a candidate: never above its original, never below its minimum."""
        return {i: max(self.minimums[i], min(self.originals[i], watts)) for i in self.devices}

    @property
    def start_w(self) -> float:
        return max(self.originals.values())

    @property
    def max_windows(self) -> int:
        return 2 * len(self.candidates) + 1

    def worst_case_s(self, run_s: float | None = None) -> float:
        """Backend-clock seconds for the whole sweep if it never stops early."""
        c = self.config
        if run_s is not None:  # benchmark: two baseline runs and one run per candidate
            return (len(self.candidates) + 2) * (c.settle_s + c.repeat * run_s)
        return self.max_windows * (c.settle_s + c.measure_s) - c.settle_s


def make_plan(devices: Sequence[Device], config: SweepConfig) -> Plan:
    """Plan a sweep over ``devices`` (their current readings) from their current limits down."""
    from gputop.core.errors import GputopError

    if not devices:
        raise GputopError("no device selected")
    for d in devices:
        if d.status != "ok":
            raise GputopError(f"GPU {d.index} is {d.status}: cannot sweep it")
        if d.power_limit_w is None or d.power_limit_min_w is None:
            raise GputopError(f"GPU {d.index} does not report its power limit and range")
    originals = {d.index: float(d.power_limit_w) for d in devices}  # type: ignore[arg-type]
    minimums = {d.index: float(d.power_limit_min_w) for d in devices}  # type: ignore[arg-type]
    step = config.step_w or default_step(max((d.power_limit_default_w or 0) for d in devices))
    floor = max(minimums.values())
    if config.lowest_w is not None:
        floor = max(floor, config.lowest_w)
    start = max(originals.values())
    maxima = [d.power_limit_max_w or d.power_limit_default_w or d.power_limit_w for d in devices]
    return Plan(
        devices=tuple(d.index for d in devices),
        uuids={d.index: d.uuid for d in devices},
        names={d.index: d.name for d in devices},
        originals=originals,
        minimums=minimums,
        max_power_w=float(sum(m for m in maxima if m is not None)),
        candidates=tuple(candidate_limits(start, floor, step)),
        step_w=step,
        config=config,
    )


@dataclass(frozen=True)
class Recommendation:
    limit_w: float  # the lowest limit measured within the allowed slowdown
    row: Row
    reason: str
    cost_optimum_w: float | None
    cost_row: Row | None
    eta: float


def recommend(rows: Sequence[Row], max_slowdown_pct: float, eta: float) -> Recommendation | None:
    """``rows`` in sweep order, the baseline first."""
    if not rows:
        return None
    chosen = rows[0]
    for row in rows[1:]:
        if row.slowdown_pct > max_slowdown_pct:
            break  # the sweep stops here too: lower limits were not (or not reliably) measured
        chosen = row
    if chosen is rows[0]:
        reason = (f"every lower limit measured cost more than {max_slowdown_pct:g}% speed:"
                  " keep the current limit")
    else:
        saved = f", saves {chosen.saved_w:.0f} W" if chosen.saved_w is not None else ""
        reason = (f"the lowest limit within {max_slowdown_pct:g}% slowdown"
                  f" (measured {chosen.slowdown_pct:.1f}%{saved})")
    costed = [r for r in rows if r.cost is not None]
    best = min(costed, key=lambda r: r.cost) if costed else None  # type: ignore[arg-type,return-value]
    return Recommendation(
        limit_w=chosen.limit_w,
        row=chosen,
        reason=reason,
        cost_optimum_w=best.limit_w if best else None,
        cost_row=best,
        eta=eta,
    )
