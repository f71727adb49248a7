"""The sweep's estimated slowdown against the simulator's ground truth, step by step."""

from __future__ import annotations

import pytest

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from tests.support.advise import TOLERANCE_PP, sweep


@pytest.mark.parametrize("scenario,seed,kind", [
    ("training", 0, "compute-bound"),
    ("training", 7, "compute-bound"),
    ("memory-bound", 0, "memory-bound"),
    ("power-capped", 3, "compute-bound"),
])
def test_estimate_within_two_points_of_truth_at_every_step(adv, scenario, seed, kind):
    result, backend = sweep(adv, scenario, seed, settle_s=5, measure_s=15)
    assert result.proxy is not None and result.proxy.kind == kind
    assert len(result.rows) >= 3
    for row in result.rows:
        assert row.true_slowdown_pct is not None
        assert abs(row.slowdown_pct - row.true_slowdown_pct) <= TOLERANCE_PP, row
    # It stopped for the stated reason, and the recommendation is within the allowed slowdown.
    last = result.rows[-1]
    if result.stopped == "max-slowdown":
        assert last.slowdown_pct > 5.0
    else:
        assert last.limit_w == backend.info().devices[0].power_limit_min_w
    rec = result.recommendation
    assert rec is not None and rec.row.slowdown_pct <= 5.0
    assert all(r.slowdown_pct <= 5.0 for r in result.rows if r.limit_w >= rec.limit_w)
    # Limits are back, as a new backend reads them.
    again = SimBackend(BackendOptions(scenario=scenario, seed=seed, sim_state=str(adv.state)))
    again.open()
    assert {d.power_limit_w for d in again.sample().devices} == set(result.plan.originals.values())
    assert adv.journals() == []


def test_memory_bound_costs_little_and_compute_bound_costs_more(adv):
    mem, _ = sweep(adv, "memory-bound", devices=[0, 1], settle_s=2, measure_s=8)
    comp, _ = sweep(adv, "training", devices=[0, 1], settle_s=2, measure_s=8)
    assert mem.stopped == "minimum" or mem.rows[-1].limit_w <= 250
    assert comp.stopped == "max-slowdown"
    assert mem.recommendation.limit_w < comp.recommendation.limit_w
    # Savings are real: lower limits draw less and cost less energy per unit of work.
    rec = comp.recommendation.row
    assert rec.saved_w > 150 and rec.energy_change_pct < -5 and rec.perf_per_w > 1.05


