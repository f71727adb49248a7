"""The measured curve: from the snapshots of each window to one row per power limit.

A sweep alternates windows at the original limit (A) and at a candidate (B): A0 B1 A1 B2 A2 ...
Each candidate is compared with the mean of the baselines on either side of it, so a job whose
pace drifts (a new phase, a warmer room) does not read as slowdown.

Work rate is not measured directly; a proxy suited to the job stands in for it:

- compute-bound: the busiest tensor/FP pipe's activity times the SM clock (or SM-active times
  the clock): GPM's activity figures are per cycle, so on their own they hide a clock drop;
- memory-bound: DRAM bandwidth, which is per second and follows the work done;
- no saturation metrics at all: utilisation times the SM clock (a compute-bound assumption,
  so an upper bound on the slowdown of a job that partly waits on memory).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gputop.core.model import Device, Snapshot

# A pipe this active (percent, per cycle) is a meaningful work proxy on its own.
MIN_PIPE_PCT = 10.0
# DRAM bandwidth at least this high, and above the busiest compute pipe: memory-bound.
MEMORY_BOUND_DRAM_PCT = 40.0


@dataclass(frozen=True)
class Proxy:
    """How a window's work rate is estimated."""

    kind: str  # "compute-bound" | "memory-bound" | "unknown"
    metric: str  # a Saturation field, or "utilization_gpu_pct"
    times_clock: bool  # multiply by the mean SM clock while computing

    @property
    def label(self) -> str:
        name = self.metric.removesuffix("_pct").replace("_", " ")
        return f"{name} × SM clock" if self.times_clock else name


@dataclass(frozen=True)
class GpuWindow:
    """One GPU over one measuring window."""

    index: int
    samples: int
    duration_s: float
    power_mean_w: float | None  # mean of the sampled (1 s averaged) draw
    energy_j: float | None  # from the energy counter
    metrics: Mapping[str, float]  # mean of each activity metric present in every sample
    metric_se: Mapping[str, float]  # standard error of those means
    clock_mhz: float | None  # mean SM clock over the samples taken while computing
    clock_se: float | None
    capped_share: float | None
    true_rate: float | None  # simulator only: ground-truth work rate
    lost: bool = False

    @property
    def power_w(self) -> float | None:
        """Mean power, from the energy counter where there is one (it misses no spike)."""
        if self.energy_j is not None and self.duration_s > 0:
            return self.energy_j / self.duration_s
        return self.power_mean_w


@dataclass(frozen=True)
class Window:
    limits: Mapping[int, float]
    gpus: Mapping[int, GpuWindow]
    duration_s: float

    @property
    def power_w(self) -> float | None:
        values = [g.power_w for g in self.gpus.values()]
        return None if not values or None in values else sum(v for v in values if v is not None)

    @property
    def energy_j(self) -> float | None:
        values = [g.energy_j for g in self.gpus.values()]
        return None if not values or None in values else sum(v for v in values if v is not None)

    @property
    def true_rate(self) -> float | None:
        values = [g.true_rate for g in self.gpus.values()]
        if not values or None in values:
            return None
        return statistics.fmean(v for v in values if v is not None)


_ACTIVITY = ("tensor_active_pct", "fp16_pct", "fp32_pct", "fp64_pct", "sm_active_pct",
             "dram_bw_pct")


def _mean_se(values: Sequence[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return mean, se


def gpu_window(index: int, devices: Sequence[tuple[float, Device]]) -> GpuWindow:
    """Reduce one GPU's (time, reading) pairs, oldest first, to a GpuWindow."""
    ok = [(t, d) for t, d in devices if d.status == "ok"]
    lost = len(ok) < len(devices)
    duration = devices[-1][0] - devices[0][0] if devices else 0.0
    draws = [d.power_draw_w for _, d in ok if d.power_draw_w is not None]
    energies = [d.energy_j for _, d in ok if d.energy_j is not None]
    energy = energies[-1] - energies[0] if len(energies) >= 2 and len(energies) == len(ok) else None
    metrics: dict[str, float] = {}
    metric_se: dict[str, float] = {}
    for name in (*_ACTIVITY, "utilization_gpu_pct"):
        if name == "utilization_gpu_pct":
            values = [d.utilization_gpu_pct for _, d in ok]
        else:
            values = [getattr(d.saturation, name) for _, d in ok]
        if values and None not in values:
            metrics[name], metric_se[name] = _mean_se([float(v) for v in values if v is not None])
    # The clock of an idle moment says nothing about the pace of the work: leave those out.
    busy = [d for _, d in ok if d.clock_event_reasons is None or "gpu_idle" not in d.clock_event_reasons]
    clocks = [float(d.clock_sm_mhz) for d in busy if d.clock_sm_mhz is not None]
    clock, clock_se = _mean_se(clocks) if clocks else (None, None)
    reasons = [d.clock_event_reasons for _, d in ok if d.clock_event_reasons is not None]
    capped = sum("sw_power_cap" in r for r in reasons) / len(reasons) if reasons else None
    rates = [d.sim.get("work_rate") for _, d in ok if d.sim]
    known = [r for r in rates if r is not None]
    true_rate = statistics.fmean(known) if rates and len(rates) == len(ok) and None not in rates else None
    return GpuWindow(
        index=index,
        samples=len(ok),
        duration_s=duration,
        power_mean_w=statistics.fmean(draws) if draws else None,
        energy_j=energy,
        metrics=metrics,
        metric_se=metric_se,
        clock_mhz=clock,
        clock_se=clock_se,
        capped_share=capped,
        true_rate=true_rate,
        lost=lost,
    )


def window(samples: Sequence[Snapshot], devices: Sequence[int], limits: Mapping[int, float]) -> Window:
    per: dict[int, list[tuple[float, Device]]] = {i: [] for i in devices}
    for snap in samples:
        for dev in snap.devices:
            if dev.index in per:
                per[dev.index].append((snap.time, dev))
    gpus = {i: gpu_window(i, rows) for i, rows in per.items() if rows}
    duration = samples[-1].time - samples[0].time if samples else 0.0
    return Window(limits=dict(limits), gpus=gpus, duration_s=duration)


def classify(baseline: Window) -> Proxy:
    """Pick the work-rate proxy from the baseline's activity (means over the GPUs)."""

    def mean(name: str) -> float | None:
        values = [g.metrics.get(name) for g in baseline.gpus.values()]
        if not values or None in values:
            return None
        return statistics.fmean(v for v in values if v is not None)

    has_clock = all(g.clock_mhz for g in baseline.gpus.values())
    means = {n: mean(n) for n in ("tensor_active_pct", "fp16_pct", "fp32_pct", "fp64_pct")}
    pipes = {n: v for n, v in means.items() if v is not None}
    busiest = max(pipes, key=lambda n: pipes[n]) if pipes else None
    dram = mean("dram_bw_pct")
    top_pipe = pipes[busiest] if busiest else 0.0
    if dram is not None and dram >= MEMORY_BOUND_DRAM_PCT and dram >= top_pipe:
        return Proxy("memory-bound", "dram_bw_pct", False)
    if has_clock and busiest is not None and top_pipe >= MIN_PIPE_PCT:
        return Proxy("compute-bound", busiest, True)
    if has_clock and mean("sm_active_pct"):
        return Proxy("compute-bound", "sm_active_pct", True)
    if dram:
        return Proxy("memory-bound", "dram_bw_pct", False)
    if has_clock and mean("utilization_gpu_pct"):
        return Proxy("unknown", "utilization_gpu_pct", True)
    raise ValueError("the devices report neither activity nor clocks: no work-rate proxy")


def gpu_rate(g: GpuWindow, proxy: Proxy) -> tuple[float, float]:
    """The proxy's value for one GPU window and its relative standard error."""
    value = g.metrics.get(proxy.metric)
    if value is None:
        raise ValueError(f"GPU {g.index}: no {proxy.metric} in this window")
    rel = (g.metric_se[proxy.metric] / value) if value else 0.0
    if proxy.times_clock:
        if not g.clock_mhz:
            raise ValueError(f"GPU {g.index}: no SM clock in this window")
        rel = math.hypot(rel, (g.clock_se or 0.0) / g.clock_mhz)
        value *= g.clock_mhz
    return value, rel


@dataclass(frozen=True)
class Row:
    """One power limit's measured cost and benefit (every selected GPU at ``limit_w``)."""

    limit_w: float
    limits: Mapping[int, float]
    power_w: float | None  # mean draw of the selected GPUs together
    saved_w: float | None  # baseline draw minus this one
    energy_j: float | None  # in the measuring window (sweep) or per run (benchmark)
    rate: float  # work rate relative to the baseline (1.0 = as fast)
    slowdown_pct: float
    spread_pct: float | None  # standard error and baseline drift together
    energy_per_work_j: float | None  # sweep: per baseline-second of work; benchmark: per run
    energy_change_pct: float | None  # energy per unit of work against the baseline
    perf_per_w: float | None  # work rate per watt against the baseline (1.10 = 10% better)
    cost: float | None  # Zeus: eta*energy + (1-eta)*max_power*time, per unit of work
    true_slowdown_pct: float | None = None  # simulator only
    time_s: float | None = None  # benchmark: wall time of one run
    capped_share: float | None = None

    @property
    def error_pp(self) -> float | None:
        if self.true_slowdown_pct is None:
            return None
        return self.slowdown_pct - self.true_slowdown_pct


def zeus_cost(energy_per_work_j: float, time_per_work_s: float, max_power_w: float,
              eta: float) -> float:
    """Zeus' cost of a unit of work: eta weighs energy against time (priced at max power)."""
    return eta * energy_per_work_j + (1.0 - eta) * max_power_w * time_per_work_s


def baseline_row(a: Window, limit_w: float, max_power_w: float, eta: float) -> Row:
    power = a.power_w
    return Row(
        limit_w=limit_w,
        limits=a.limits,
        power_w=power,
        saved_w=0.0 if power is not None else None,
        energy_j=a.energy_j,
        rate=1.0,
        slowdown_pct=0.0,
        spread_pct=None,
        energy_per_work_j=power,
        energy_change_pct=0.0 if power is not None else None,
        perf_per_w=1.0 if power is not None else None,
        cost=zeus_cost(power, 1.0, max_power_w, eta) if power is not None else None,
        true_slowdown_pct=0.0 if a.true_rate is not None else None,
        capped_share=_capped(a),
    )


def _capped(w: Window) -> float | None:
    values = [g.capped_share for g in w.gpus.values()]
    if not values or None in values:
        return None
    return statistics.fmean(v for v in values if v is not None)


def step_row(limit_w: float, before: Window, b: Window, after: Window, proxy: Proxy,
             max_power_w: float, eta: float) -> Row:
    """Compare window ``b`` with the baselines measured just before and just after it."""
    ratios = []
    variances = []
    drifts = []
    for i, gb in b.gpus.items():
        ga1, ga2 = before.gpus.get(i), after.gpus.get(i)
        if ga1 is None or ga2 is None:
            continue
        vb, eb = gpu_rate(gb, proxy)
        v1, e1 = gpu_rate(ga1, proxy)
        v2, e2 = gpu_rate(ga2, proxy)
        base = (v1 + v2) / 2
        if base <= 0:
            continue
        ratios.append(vb / base)
        variances.append(eb**2 + (e1**2 + e2**2) / 4)
        drifts.append(abs(v1 - v2) / (v1 + v2))
    if not ratios:
        raise ValueError(f"no GPU measured at {limit_w:g} W and at the baseline")
    n = len(ratios)
    # A data-parallel job waits for its slowest GPU, and the proxies of the others show that
    # wait; their mean is the job's rate with less noise than any one of them.
    rate = statistics.fmean(ratios)
    spread = 100.0 * rate * math.sqrt(sum(variances) / n**2 + statistics.fmean(drifts) ** 2)
    power = b.power_w
    pa1, pa2 = before.power_w, after.power_w
    base_power = (pa1 + pa2) / 2 if pa1 is not None and pa2 is not None else None
    truth = None
    tb, t1, t2 = b.true_rate, before.true_rate, after.true_rate
    if tb is not None and t1 is not None and t2 is not None and t1 + t2 > 0:
        truth = 100.0 * (1.0 - tb / ((t1 + t2) / 2))
    epw = power / rate if power is not None and rate > 0 else None
    return Row(
        limit_w=limit_w,
        limits=b.limits,
        power_w=power,
        saved_w=base_power - power if base_power is not None and power is not None else None,
        energy_j=b.energy_j,
        rate=rate,
        slowdown_pct=100.0 * (1.0 - rate),
        spread_pct=spread,
        energy_per_work_j=epw,
        energy_change_pct=100.0 * (epw / base_power - 1.0) if epw and base_power else None,
        perf_per_w=(base_power / epw) if epw and base_power else None,
        cost=zeus_cost(epw, 1.0 / rate, max_power_w, eta) if epw is not None else None,
        true_slowdown_pct=truth,
        capped_share=_capped(b),
    )
