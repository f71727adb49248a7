"""How much of a job's power cycle a passive window covers: pure functions.

A training job's draw repeats: steps, an evaluation, a checkpoint, a data loader that stalls. A
limit read off less than a couple of those cycles misses their peaks (#27: 450 W suggested from
30 s for a GPU that peaks at 640 W every 60 s). ``find_period`` finds the cycle's length in the
power trace by autocorrelation, and only when it is sure; ``coverage`` says how much of it the
window holds, in the words the advisor prints.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# The resampled trace has at most this many points: the autocorrelation below is O(points x
# lags) in pure Python, and the advisor screen redraws every 2 s over up to 600 samples per GPU.
MAX_POINTS = 180
# Fewer points than this say nothing about a cycle (20 s at the default 1 s interval).
MIN_POINTS = 20
# A period is claimed only where the window holds this many of it: the lagged copy then still
# overlaps a third of the trace, enough to tell a repeat from chance.
MIN_CYCLES_SEEN = 1.5
# The correlation a repeat needs with its lagged copy: a real cycle's is near 1, white noise's
# about 1/sqrt(overlap); below SIGNIFICANCE/sqrt(overlap) it could be chance.
MIN_CORRELATION = 0.6
SIGNIFICANCE = 3.0
# Of the lags that pass, the shortest within this share of the best: a 60 s cycle also matches
# itself at 120 s and 180 s, and where cycles vary in length a multiple can match a little
# better than the cycle itself; the cycle is the shortest of those.
NEAR_BEST = 0.75
# A trace that swings less than this (its standard deviation) has no cycle worth naming: under
# a few percent of the draw its peaks stay inside the headroom a suggested limit keeps anyway,
# and that small a swing is mostly training steps too short for the sampling interval, aliased
# into slow beats that are not the job's cycle.
FLAT_W = 1.0
FLAT_SHARE = 0.03


def find_period(points: Sequence[tuple[float, float]]) -> float | None:
    """Return the period in seconds of the cycle that ``points`` ((time s, watts), oldest
    first) repeats, or None where it finds none with confidence: a flat trace, noise, a trend,
    or a window that holds less than ``MIN_CYCLES_SEEN`` cycles."""
    xs = _resample(points)
    if xs is None:
        return None
    step, values = xs
    n = len(values)
    mean = sum(values) / n
    centred = [v - mean for v in values]
    if math.sqrt(sum(c * c for c in centred) / n) < max(FLAT_W, FLAT_SHARE * abs(mean)):
        return None
    max_lag = int((n - 1) / MIN_CYCLES_SEEN)
    if max_lag + 1 >= n:
        return None
    # one lag past the longest, to tell whether the longest is a peak
    r = [1.0] + [_correlation(centred, k) for k in range(1, max_lag + 2)]
    # The trace must first stop resembling itself: before that, a lag only measures smoothness.
    first_low = next((k for k in range(1, max_lag + 1) if r[k] <= 0), None)
    if first_low is None:
        return None
    peaks = [k for k in range(first_low + 1, max_lag + 1)
             if r[k] >= r[k - 1] and r[k] >= r[k + 1]
             and r[k] >= max(MIN_CORRELATION, SIGNIFICANCE / math.sqrt(n - k))
             and _repeats(r, k, max_lag)]
    if not peaks:
        return None
    best = max(r[k] for k in peaks)
    k = next(k for k in peaks if r[k] >= NEAR_BEST * best)
    # the peak's top between the lags on either side (a parabola through the three)
    bend = r[k - 1] - 2 * r[k] + r[k + 1]
    shift = 0.5 * (r[k - 1] - r[k + 1]) / bend if bend < 0 else 0.0
    return (k + shift) * step


def _repeats(r: Sequence[float], k: int, max_lag: int) -> bool:
    """Tell whether a cycle of ``k`` lags also matches at about twice that, where the window
    reaches so far: noise can match itself once by chance, hardly twice. A job's cycles vary a
    little in length, so the second match may sit up to an eighth of a cycle off."""
    slack = max(1, k // 8)
    if 2 * k + slack > max_lag:
        return True
    return max(r[2 * k - slack:2 * k + slack + 1]) >= MIN_CORRELATION


def _resample(points: Sequence[tuple[float, float]]) -> tuple[float, list[float]] | None:
    """Return (step, values): the trace linearly interpolated onto even steps, at the median
    sampling interval or coarser so that it has at most ``MAX_POINTS``; None if too short."""
    pts: list[tuple[float, float]] = []
    for t, v in points:
        if not pts or t > pts[-1][0]:  # a repeated or backwards time adds nothing to interpolate
            pts.append((t, v))
    if len(pts) < MIN_POINTS:
        return None
    span = pts[-1][0] - pts[0][0]
    gaps = sorted(b[0] - a[0] for a, b in zip(pts, pts[1:], strict=False))
    step = max(gaps[len(gaps) // 2], span / (MAX_POINTS - 1))
    count = int(span / step + 1e-9) + 1
    if count < MIN_POINTS:
        return None
    values, j = [], 0
    for i in range(count):
        t = pts[0][0] + i * step
        while j + 1 < len(pts) - 1 and pts[j + 1][0] < t:
            j += 1
        (t0, v0), (t1, v1) = pts[j], pts[j + 1]
        values.append(v0 + (v1 - v0) * min(1.0, max(0.0, (t - t0) / (t1 - t0))))
    return step, values


def _correlation(xs: list[float], lag: int) -> float:
    """Return the Pearson correlation of ``xs`` with itself ``lag`` steps later (0 where either
    part does not vary)."""
    a, b = xs[:-lag], xs[lag:]
    m = len(a)
    ma, mb = sum(a) / m, sum(b) / m
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True))
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    return cov / math.sqrt(va * vb) if va > 0 and vb > 0 else 0.0


def span(seconds: float) -> str:
    """Say a length of time the way the advisor's sentences do: `30 s`, `5.5 min`, `2 h`."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{_short(seconds / 60)} min"
    return f"{_short(seconds / 3600)} h"


def _short(value: float) -> str:
    """One decimal where it says something (5.5), none where it does not (6, not 6.0)."""
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}".removesuffix(".0")


def cycles(window_s: float, period_s: float) -> float:
    """Return how many of the cycle the window holds."""
    return window_s / period_s


def coverage(window_s: float, period_s: float | None) -> str:
    """Say how long the advisor watched and how much of the job's cycle that is: `watched 6
    min: 6 cycles of about 60 s`, or `watched 30 s: no repeating cycle found in it`."""
    if period_s is None:
        return f"watched {span(window_s)}: no repeating cycle found in it"
    n = cycles(window_s, period_s)
    return (f"watched {span(window_s)}: {_short(n)} cycle{'' if n == 1 else 's'}"
            f" of about {span(period_s)}")
