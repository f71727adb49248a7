"""The passive view: what the power draw says about the limit, without changing anything."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gputop.advisor import cycle
from gputop.core.model import Device, Snapshot
from gputop.history import History

# A lower limit "costs nothing" when it leaves this much headroom over what the job drew.
HEADROOM_P95 = 1.10  # 10% above the 95th percentile of the (1-second averaged) draw
HEADROOM_PEAK = 1.02  # and 2% above the highest reading
ROUND_TO_W = 5.0
# Only worth saying when it lowers the limit by at least this much.
MIN_GAIN_SHARE = 0.05
MIN_GAIN_W = 10.0
# Below this much watching, no limit is suggested: a training job's cycle (evaluation,
# checkpointing, a data-loader stall) can be minutes long, and a short window misses its peaks
# (#27: 450 W suggested from 30 s for a GPU that peaks at 640 W over a 60 s cycle).
MIN_ADVICE_WINDOW_S = 300.0
# Nor from fewer than this many cycles where the draw repeats one: a 4-min checkpoint cycle in a
# 5-min window peaks once or twice, by luck. Where no cycle is found the 5 minutes stand alone,
# and the coverage line says that none was found (a cycle longer than the window cannot be).
MIN_ADVICE_CYCLES = 2.0


@dataclass(frozen=True)
class PassiveGpu:
    index: int
    uuid: str | None
    name: str | None
    samples: int
    window_s: float  # the samples' own span, not the window asked for
    period_s: float | None  # the draw's repeating cycle (cycle.find_period), None if none found
    draw_p50_w: float | None
    draw_p95_w: float | None
    draw_max_w: float | None
    draw_mean_w: float | None
    limit_w: float | None
    limit_default_w: float | None
    limit_min_w: float | None
    limit_max_w: float | None
    capped_share: float | None  # share of samples the software power cap held the clock down
    energy_j: float | None  # from the energy counter, over the window
    energy_per_interval_j: float | None  # the same, per sampling interval
    suggestion_w: float | None  # a lower limit that would not have been reached
    note: str
    # MIG: the profiles of its instances ("3g.40gb", ...); () on a whole GPU
    mig_profiles: tuple[str, ...] = ()


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between the closest ranks."""
    if not values:
        raise ValueError("percentile of nothing")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def free_limit(p95_w: float, peak_w: float, limit_w: float, min_w: float | None) -> float | None:
    """The lowest limit that keeps clear headroom over the draw seen, if clearly below ``limit_w``."""
    want = max(p95_w * HEADROOM_P95, peak_w * HEADROOM_PEAK)
    want = math.ceil(want / ROUND_TO_W) * ROUND_TO_W
    if min_w is not None:
        want = max(want, min_w)
    if limit_w - want < max(MIN_GAIN_W, MIN_GAIN_SHARE * limit_w):
        return None
    return float(want)


@dataclass(frozen=True)
class Watch:
    """One GPU's readings over a watch, oldest first, one entry per sample in each list; the
    draw, the capping (1 capped, 0 not, None unknown) and the energy only while it was ok."""

    last: Device
    times: list[float]
    ok: list[bool]
    draw_w: list[float | None]
    capped: list[float | None]
    energy_j: list[float | None]


def summarize(samples: Sequence[Snapshot], devices: Sequence[int] | None = None) -> list[PassiveGpu]:
    """One summary per GPU over a run of snapshots (oldest first)."""
    order: list[int] = []
    per: dict[int, list[tuple[float, Device]]] = {}
    for snap in samples:
        for dev in snap.devices:
            if devices is not None and dev.index not in devices:
                continue
            if dev.index not in per:
                per[dev.index] = []
                order.append(dev.index)
            per[dev.index].append((snap.time, dev))
    return [_one(_watch(per[i])) for i in order]


def summarize_history(history: History, devices: Sequence[int] | None = None,
                      keep: Callable[[float], bool] = lambda t: True) -> list[PassiveGpu]:
    """One summary per GPU of the newest sample, over the sampler's history (its samples at
    ``keep(time)`` only: the advisor leaves out its own sweeps)."""
    latest = history.latest
    if latest is None:
        return []
    out = []
    for dev in latest.devices:
        if devices is not None and dev.index not in devices:
            continue
        times, columns = history.device_columns(
            dev.index, ("ok", "power_draw_w", "power_capped", "energy_j"))
        rows = [i for i, t in enumerate(times) if keep(t)]
        if not rows:
            continue
        ok, draw, capped, energy = ([values[i] for i in rows] for values in columns)
        out.append(_one(Watch(dev, [times[i] for i in rows], [v == 1.0 for v in ok], draw,
                              capped, energy)))
    return out


def _watch(series: list[tuple[float, Device]]) -> Watch:
    def capped(d: Device) -> float | None:
        r = d.clock_event_reasons
        return None if r is None else float("sw_power_cap" in r)

    return Watch(series[-1][1], [t for t, _ in series], [d.status == "ok" for _, d in series],
                 [d.power_draw_w for _, d in series], [capped(d) for _, d in series],
                 [d.energy_j for _, d in series])


def _one(w: Watch) -> PassiveGpu:
    last = w.last
    ok = [i for i, good in enumerate(w.ok) if good]
    draws = [v for v in (w.draw_w[i] for i in ok) if v is not None]
    window = w.times[-1] - w.times[0]
    reasons = [v for v in (w.capped[i] for i in ok) if v is not None]
    capped = (sum(reasons) / len(reasons)) if reasons else None
    energies = [e for e in (w.energy_j[i] for i in ok) if e is not None]
    energy = energies[-1] - energies[0] if len(energies) >= 2 else None
    per_interval = energy / (len(energies) - 1) if energy is not None else None
    limit = last.power_limit_w
    p50 = percentile(draws, 50) if draws else None
    p95 = percentile(draws, 95) if draws else None
    peak = max(draws) if draws else None
    period = cycle.find_period([(w.times[i], d) for i in ok
                                if (d := w.draw_w[i]) is not None])
    suggestion = None
    if last.status != "ok":
        note = f"GPU is {last.status}" + (f": {last.status_reason}" if last.status_reason else "")
    elif p95 is None or peak is None:
        note = "no power readings: nothing to say about the limit"
    elif limit is None:
        note = "the device reports no power limit: nothing to compare the draw with"
    elif capped is None:
        note = "the device does not report power capping: no advice"
    elif capped > 0:
        note = (f"held back by the power cap {capped:.0%} of the time: a lower limit costs speed"
                " (a sweep measures how much)")
    elif window < MIN_ADVICE_WINDOW_S:
        note = (f"watched {window:.0f} s, too short to suggest a limit (a job's cycle can be"
                f" longer): watch {MIN_ADVICE_WINDOW_S / 60:.0f} min or more (--window"
                f" {MIN_ADVICE_WINDOW_S:.0f}), or measure with a sweep")
    else:
        suggestion = free_limit(p95, peak, limit, last.power_limit_min_w)
        if suggestion is None:
            note = "draw near the limit: a sweep measures what less costs"
        elif period is not None and cycle.cycles(window, period) < MIN_ADVICE_CYCLES:
            suggestion = None
            need = math.ceil(MIN_ADVICE_CYCLES * period / 60) * 60
            note = (f"{cycle.coverage(window, period)}, too few to suggest a limit: watch"
                    f" {cycle.span(need)} or more (--window {need}), or measure with a sweep")
        else:
            note = (f"a limit of {suggestion:.0f} W would cost nothing for this load: p95 draw"
                    f" {p95:.0f} W, never capped")
    return PassiveGpu(
        index=last.index,
        uuid=last.uuid,
        name=last.name,
        samples=len(w.times),
        window_s=window,
        period_s=period,
        draw_p50_w=p50,
        draw_p95_w=p95,
        draw_max_w=peak,
        draw_mean_w=sum(draws) / len(draws) if draws else None,
        limit_w=limit,
        limit_default_w=last.power_limit_default_w,
        limit_min_w=last.power_limit_min_w,
        limit_max_w=last.power_limit_max_w,
        capped_share=capped,
        energy_j=energy,
        energy_per_interval_j=per_interval,
        suggestion_w=suggestion,
        note=note,
        mig_profiles=tuple(m.profile or "?" for m in last.mig_instances),
    )
