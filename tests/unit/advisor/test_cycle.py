"""The power cycle a passive window covers (#27): found only when sure, said in plain words."""

from __future__ import annotations

import math
import random

import pytest

from gputop.advisor.cycle import coverage, find_period, span


def trace(seconds: int, watts, noise_w: float = 5.0, seed: int = 0) -> list[tuple[float, float]]:
    """One reading a second for ``seconds`` (both ends), ``watts(t)`` plus Gaussian noise."""
    rng = random.Random(seed)
    return [(float(t), watts(t) + rng.gauss(0, noise_w)) for t in range(seconds + 1)]


def square(t: float) -> float:
    """640 W for 30 s, 300 W for 30 s: the issue's GPU that peaks at 640 W over a 60 s cycle."""
    return 640.0 if t % 60 < 30 else 300.0


def sine(t: float) -> float:
    return 450.0 + 150.0 * math.sin(2 * math.pi * t / 60)


@pytest.mark.parametrize("shape", [square, sine])
def test_less_than_a_cycle_finds_none(shape):
    assert find_period(trace(30, shape)) is None  # half of one cycle: nothing repeats yet


@pytest.mark.parametrize("shape", [square, sine])
@pytest.mark.parametrize("seconds", [120, 300, 600])
def test_a_60_s_cycle_is_found(shape, seconds):
    assert find_period(trace(seconds, shape)) == pytest.approx(60, abs=3)


def test_cycles_that_vary_in_length_read_as_the_cycle_not_a_multiple():
    for seed in range(20):  # each cycle 56-64 s long: a multiple may match a little better
        rng = random.Random(seed)
        starts = [0.0]
        while starts[-1] < 400:
            starts.append(starts[-1] + 60 + rng.uniform(-4, 4))

        def jittered(t, starts=starts):
            return 640.0 if t - max(s for s in starts if s <= t) < 25 else 300.0

        assert find_period(trace(360, jittered, 10, seed)) == pytest.approx(60, abs=5)


def test_flat_noise_and_a_trend_have_no_cycle():
    assert find_period(trace(300, lambda t: 400.0, noise_w=0)) is None
    assert find_period(trace(300, lambda t: 400.0, noise_w=0.3)) is None  # under a watt
    for seed in range(20):
        for seconds in (30, 60, 300):
            assert find_period(trace(seconds, lambda t: 400.0, 20, seed)) is None, (seed, seconds)
    assert find_period(trace(300, lambda t: 300.0 + t)) is None  # warming up, not repeating
    # a swing of a few watts on 680 W repeats (steps aliased by the sampling) but is no cycle
    # that matters to a limit
    assert find_period(trace(300, lambda t: 680.0 + 6 * math.sin(2 * math.pi * t / 60), 1)) is None


def test_uneven_sampling_and_repeated_times_are_resampled():
    rng = random.Random(3)
    points, t = [], 0.0
    while t <= 300:
        points.append((t, square(t)))
        if rng.random() < 0.1:
            points.append((t, square(t)))  # a repeated timestamp
        t += rng.uniform(0.5, 1.5)
    assert find_period(points) == pytest.approx(60, abs=3)
    assert find_period(points[:10]) is None  # too few readings to say


def test_coverage_says_the_window_and_how_many_cycles():
    assert coverage(30, None) == "watched 30 s: no repeating cycle found in it"
    assert coverage(360, 60.2) == "watched 6 min: 6 cycles of about 60 s"
    assert coverage(300, 180) == "watched 5 min: 1.7 cycles of about 3 min"
    assert coverage(60, 60) == "watched 60 s: 1 cycle of about 60 s"
    assert [span(s) for s in (5, 119.6, 330, 7200)] == ["5 s", "120 s", "5.5 min", "2 h"]
