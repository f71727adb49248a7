"""Text, JSON and plot renderings of the advisor's results (no Textual: the CLI uses them too)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gputop.advisor import cycle
from gputop.backends.base import nvidia_smi_commands
from gputop.core.formatting import NA, num

if TYPE_CHECKING:  # types only: the screen's passive view needs none of the sweep's modules
    from gputop.advisor.curve import Row
    from gputop.advisor.passive import PassiveGpu
    from gputop.advisor.recommend import Plan
    from gputop.advisor.sweep import SweepResult

JSON_SCHEMA = "gputop-advise/1"
# A backend's commands that set limits by hand (Backend.limit_commands); nvidia-smi's by default.
LimitCommands = Callable[[Mapping[int, float]], list[str]]


def _ids(indices: Sequence[int]) -> str:
    return ",".join(str(i) for i in indices)


# ------------------------------------------------------------------ passive
def passive_lines(gpus: Sequence[PassiveGpu], note: str = "passive: nothing was changed",
                  commands: bool = True,
                  limit_commands: LimitCommands = nvidia_smi_commands) -> list[str]:
    """Return the passive view: the table, how much of each GPU's cycle the window held, and,
    where ``commands`` (not on a recording), the backend's commands (``limit_commands``) for
    the no-cost limits, where it has any."""
    if not gpus:
        return ["no samples"]
    window = max(g.window_s for g in gpus)
    lines = [f"Power over the last {window:.0f} s ({note})",
             f"{'GPU':>3}  {'p50':>6} {'p95':>6} {'peak':>6}  {'limit':>6}  {'range':>11}"
             f"  {'capped':>6}  {'energy':>9}  note"]
    for g in gpus:
        rng = (f"{num(g.limit_min_w)}-{num(g.limit_max_w)} W"
               if g.limit_min_w is not None or g.limit_max_w is not None else NA)
        capped = num(None if g.capped_share is None else 100 * g.capped_share, ".0f", "%")
        energy = "N/A" if g.energy_j is None else f"{g.energy_j / 1000:.1f} kJ"
        lines.append(
            f"{g.index:>3}  {num(g.draw_p50_w, '5.0f', 'W'):>6} {num(g.draw_p95_w, '5.0f', 'W'):>6}"
            f" {num(g.draw_max_w, '5.0f', 'W'):>6}  {num(g.limit_w, '5.0f', 'W'):>6}  {rng:>11}"
            f"  {capped:>6}  {energy:>9}  {g.note}"
        )
    lines += coverage_lines(gpus)
    lines += mig_lines(gpus)
    suggested = {g.index: g.suggestion_w for g in gpus if g.suggestion_w is not None}
    cmds = limit_commands(suggested) if suggested and commands else []
    if cmds:
        lines.append("To apply the no-cost limits: " + "; ".join(cmds))
    return lines


def coverage_lines(gpus: Sequence[PassiveGpu]) -> list[str]:
    """One line per distinct coverage: how long the readings span and how much of the job's
    cycle that is (#27: a 30 s window read as the whole job). GPUs that share it share a line."""
    said: dict[str, list[int]] = {}
    for g in gpus:
        said.setdefault(cycle.coverage(g.window_s, g.period_s), []).append(g.index)
    return [f"GPU {_ids(indices)} {text}" for text, indices in said.items()]


def mig_lines(gpus: Sequence[PassiveGpu]) -> list[str]:
    """One line where MIG splits some GPUs: a power limit belongs to the physical GPU, so
    the advisor changes and measures the whole GPU, all of its instances' jobs together."""
    split = [g for g in gpus if g.mig_profiles]
    if not split:
        return []
    which = "; ".join(f"GPU {g.index} ({_profiles(g.mig_profiles)})" for g in split)
    return [f"MIG: {which}. Power limits are per physical GPU: the advisor sets the whole GPU's"
            " limit and measures the slowdown of all its instances' jobs together."]


def _profiles(profiles: Sequence[str]) -> str:
    counts = Counter(profiles)
    return ", ".join(f"{n}x {p}" if n > 1 else p for p, n in counts.items())


def passive_json(g: PassiveGpu) -> dict[str, Any]:
    return {
        "index": g.index, "uuid": g.uuid, "name": g.name, "samples": g.samples,
        "window_s": round(g.window_s, 3), "period_s": _r(g.period_s, 1),
        "cycles": None if g.period_s is None else _r(cycle.cycles(g.window_s, g.period_s), 1),
        "coverage": cycle.coverage(g.window_s, g.period_s),
        "draw_p50_w": _r(g.draw_p50_w), "draw_p95_w": _r(g.draw_p95_w),
        "draw_max_w": _r(g.draw_max_w), "draw_mean_w": _r(g.draw_mean_w),
        "power_limit_w": g.limit_w, "power_limit_default_w": g.limit_default_w,
        "power_limit_min_w": g.limit_min_w, "power_limit_max_w": g.limit_max_w,
        "capped_share": _r(g.capped_share, 4), "energy_j": _r(g.energy_j),
        "energy_per_interval_j": _r(g.energy_per_interval_j),
        "no_cost_limit_w": g.suggestion_w, "note": g.note,
        "mig_profiles": list(g.mig_profiles),
    }


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


# ------------------------------------------------------------------ plan
def plan_lines(plan: Plan, mode: str, command: Sequence[str] | None = None,
               run_s: float | None = None,
               limit_commands: LimitCommands = nvidia_smi_commands) -> list[str]:
    c = plan.config
    lines = [f"Plan ({mode}) for GPU {_ids(plan.devices)}:"]
    for i in plan.devices:
        lines.append(f"  GPU {i} {plan.names.get(i) or ''}: limit {plan.originals[i]:g} W now,"
                     f" minimum {plan.minimums[i]:g} W")
    cands = ", ".join(f"{w:g}" for w in plan.candidates) or "(none: already at the minimum)"
    lines.append(f"  candidate limits (step {plan.step_w:g} W): {cands} W")
    if mode == "benchmark":
        lines.append(f"  per limit: settle {c.settle_s:g} s, then run {' '.join(command or [])!r}"
                     f" {c.repeat}x; the baseline runs before and after the candidates")
    else:
        lines.append(f"  per limit: settle {c.settle_s:g} s, measure {c.measure_s:g} s; the"
                     " original limit is measured again between steps (A-B-A)")
    lines.append(f"  stops below the first limit that costs more than {c.max_slowdown_pct:g}% speed")
    if mode != "benchmark" or run_s is not None:
        worst = plan.worst_case_s(run_s)
        lines.append(f"  at most {worst / 60:.1f} min (sooner when it stops early)")
    lines.append("  original limits are journaled first and restored at the end, on error,"
                 " Ctrl-C, SIGTERM and SIGHUP")
    cmds = [*(limit_commands(plan.limits_for(plan.candidates[0])) if plan.candidates else []),
            *limit_commands(plan.originals)]
    if cmds:
        lines.append("  equivalent commands for the first step and the restore: "
                     + "; ".join(cmds))
    return lines


# ------------------------------------------------------------------ result
def table_lines(rows: Sequence[Row], mode: str, max_slowdown_pct: float) -> list[str]:
    truth = any(r.true_slowdown_pct is not None for r in rows)
    unit = "J/run" if mode == "benchmark" else "J/work-s"
    head = (f"{'limit':>6}  {'draw':>7}  {'saved':>6}  {'slowdown':>13}  {'energy/work':>17}"
            f"  {'perf/W':>7}  {'cost':>6}")
    if mode == "benchmark":
        head += f"  {'time':>8}"
    if truth:
        head += f"  {'true':>6}  {'error':>6}"
    lines = [head]
    base_cost = rows[0].cost if rows else None
    for r in rows:
        spread = f"±{r.spread_pct:.1f}" if r.spread_pct is not None else "    "
        slow = f"{r.slowdown_pct:5.1f}%{spread:>6}"
        epw = "N/A"
        if r.energy_per_work_j is not None:
            change = f"{r.energy_change_pct:+.0f}%" if r.energy_change_pct is not None else ""
            epw = f"{r.energy_per_work_j:.0f} {change:>4}"
        ppw = "N/A" if r.perf_per_w is None else f"{100 * (r.perf_per_w - 1):+.0f}%"
        cost = "N/A" if r.cost is None or not base_cost else f"{r.cost / base_cost:.3f}"
        mark = " >" if r.slowdown_pct > max_slowdown_pct else ""
        line = (f"{r.limit_w:>5.0f}W  {num(r.power_w, '6.0f', 'W'):>7}  {num(r.saved_w, '5.0f', 'W'):>6}"
                f"  {slow:>13}  {epw:>17}  {ppw:>7}  {cost:>6}")
        if mode == "benchmark":
            line += f"  {num(r.time_s, '7.2f', 's'):>8}"
        if truth:
            err = r.error_pp
            line += f"  {num(r.true_slowdown_pct, '5.1f', '%'):>6}  {num(err, '+5.2f', ''):>6}"
        lines.append(line + mark)
    lines.append(f"energy/work in {unit} with its change against the baseline; perf/W against the"
                 " baseline; cost = Zeus' η·energy + (1−η)·max power·time, relative to the baseline"
                 + ("; true = the simulator's ground truth, error in percentage points" if truth else "")
                 + f"; > = over {max_slowdown_pct:g}%")
    return lines


def recommendation_lines(result: SweepResult,
                         limit_commands: LimitCommands = nvidia_smi_commands) -> list[str]:
    rec = result.recommendation
    if rec is None:
        return ["no recommendation: nothing was measured"]
    plan = result.plan
    lines = [f"Recommended limit: {rec.limit_w:g} W ({rec.reason})."]
    if rec.cost_optimum_w is not None:
        lines.append(f"Cost optimum (η={rec.eta:g}, Zeus): {rec.cost_optimum_w:g} W"
                     + (" (the sweep stopped there: lower limits were not measured)"
                        if rec.cost_row is result.rows[-1] and result.stopped == "max-slowdown"
                        else "") + ".")
    cmds = limit_commands(plan.limits_for(rec.limit_w)) if rec.limit_w < plan.start_w else []
    if cmds:
        lines.append("To apply it (until the next reboot or driver reload): " + "; ".join(cmds))
    return lines


def row_json(r: Row) -> dict[str, Any]:
    return {
        "limit_w": r.limit_w,
        "limits_w": {str(i): w for i, w in r.limits.items()},
        "power_w": _r(r.power_w), "saved_w": _r(r.saved_w), "energy_j": _r(r.energy_j),
        "rate": _r(r.rate, 5),
        "slowdown_pct": _r(r.slowdown_pct, 3), "spread_pct": _r(r.spread_pct, 3),
        "energy_per_work_j": _r(r.energy_per_work_j, 3),
        "energy_change_pct": _r(r.energy_change_pct, 3),
        "perf_per_w": _r(r.perf_per_w, 5), "cost": _r(r.cost, 3),
        "capped_share": _r(r.capped_share, 4), "time_s": _r(r.time_s, 4),
        "true_slowdown_pct": _r(r.true_slowdown_pct, 3),
        "error_pp": _r(r.error_pp, 3),
    }


def result_json(result: SweepResult,
                limit_commands: LimitCommands = nvidia_smi_commands) -> dict[str, Any]:
    plan, c = result.plan, result.plan.config
    rec = result.recommendation
    return {
        "mode": result.mode,
        "command": result.command,
        "job_class": result.proxy.kind if result.proxy else None,
        "proxy": result.proxy.label if result.proxy else ("wall time" if result.mode == "benchmark" else None),
        "devices": list(plan.devices),
        "original_limits_w": {str(i): w for i, w in plan.originals.items()},
        "step_w": plan.step_w, "settle_s": c.settle_s, "measure_s": c.measure_s,
        "max_slowdown_pct": c.max_slowdown_pct, "eta": c.eta,
        "stopped": result.stopped,
        "rows": [row_json(r) for r in result.rows],
        "recommendation": None if rec is None else {
            "limit_w": rec.limit_w,
            "limits_w": {str(i): w for i, w in plan.limits_for(rec.limit_w).items()},
            "slowdown_pct": _r(rec.row.slowdown_pct, 3),
            "saved_w": _r(rec.row.saved_w),
            "reason": rec.reason,
            "cost_optimum_w": rec.cost_optimum_w,
            "eta": rec.eta,
            "commands": limit_commands(plan.limits_for(rec.limit_w))
            if rec.limit_w < plan.start_w else [],
        },
    }


def restored_lines(restored: Sequence[tuple[int, float | None, float]],
                   originals: Mapping[int, float]) -> list[str]:
    values = sorted(set(originals.values()))
    what = ", ".join(f"{w:g} W" for w in values)
    changed = f"; {len(restored)} set back" if restored else ""
    return [f"Power limits restored to the originals ({what} on GPU {_ids(sorted(originals))}"
            f"{changed}; read back to confirm)."]


# ------------------------------------------------------------------ plot
def plot(rows: Sequence[Row], width: int = 72, height: int = 16, max_slowdown_pct: float | None = None,
         color: bool = False) -> str:
    """The slowdown-versus-limit curve drawn by plotext, as text (ANSI colours if ``color``).

    The legend is a line of its own under the plot: plotext draws its legend box inside the
    canvas, where it hid half the curve."""
    import plotext

    fig = plotext.figure
    fig.clear()
    fig.plot_size(width, height - 1)  # the last line is the legend's
    fig.theme("simple" if color else "colorless")
    fig.ruler("x").direction(-1)  # the sweep's order: from the current limit down, left to right
    xs = [r.limit_w for r in rows]
    legend = ["● measured slowdown %"]
    est = fig.signal(xs, [r.slowdown_pct for r in rows], marker="●")
    est.lines()
    fig.draw(est)
    truth = [r.true_slowdown_pct for r in rows]
    if all(t is not None for t in truth):
        fig.draw(fig.signal(xs, truth, marker="x"))
        legend.append("x true (simulator)")
    if max_slowdown_pct is not None and len(xs) > 1:
        limit = fig.signal([min(xs), max(xs)], [max_slowdown_pct] * 2, marker="·")
        limit.lines()
        fig.draw(limit)
        legend.append(f"· max {max_slowdown_pct:g}%")
    fig.label("power limit (W)", "x")
    text = fig.build().string(colorless=not color)
    fig.clear()
    return text.rstrip("\n") + "\n" + "   ".join(legend).center(width).rstrip()
