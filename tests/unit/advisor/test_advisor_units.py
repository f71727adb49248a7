"""Pure parts of the advisor: passive summary, proxies, rows, recommendation, journal, plot."""

from __future__ import annotations

import json
import os

import pytest

from gputop.advisor import curve, journal, passive, render
from gputop.advisor.recommend import (
    SweepConfig,
    candidate_limits,
    default_step,
    make_plan,
    recommend,
)
from gputop.advisor.safety import RECORDING, SignalExit, SignalGuard, missing_privilege
from gputop.backends.base import NoPermission, nvidia_smi_commands
from gputop.core.errors import GputopError
from gputop.core.model import Device, Saturation, Snapshot
from tests.support.advise import state_sim


def dev(i=0, power=300.0, limit=400.0, energy=0.0, clock=1400.0, reasons=("sw_power_cap",),
        tensor=50.0, dram=20.0, rate=None, status="ok", **kw) -> Device:
    return Device(index=i, uuid=f"GPU-{i}", name="X", status=status, power_draw_w=power,
                  power_limit_w=limit, power_limit_min_w=100.0, power_limit_max_w=400.0,
                  power_limit_default_w=400.0, energy_j=energy, clock_sm_mhz=clock,
                  clock_event_reasons=reasons, utilization_gpu_pct=100,
                  saturation=Saturation(source="sim", sm_active_pct=80.0, tensor_active_pct=tensor,
                                        dram_bw_pct=dram, fp16_pct=tensor / 2, fp32_pct=5.0,
                                        fp64_pct=0.0),
                  sim=None if rate is None else {"work_rate": rate}, **kw)


def snaps(n, **kw) -> list[Snapshot]:
    power = kw.pop("power", 300.0)
    return [Snapshot(host="h", time=float(t), backend="sim",
                     devices=(dev(power=power, energy=power * t, **kw),)) for t in range(n)]


# ------------------------------------------------------------------ passive
def test_percentile_interpolates():
    assert passive.percentile([1, 2, 3, 4], 50) == 2.5
    assert passive.percentile([5], 95) == 5
    assert passive.percentile([10, 0, 20], 100) == 20
    with pytest.raises(ValueError):
        passive.percentile([], 50)


def test_free_limit_only_when_clearly_lower():
    assert passive.free_limit(300, 310, 700, 200) == 330  # 1.1 x 300, rounded up to 5 W
    assert passive.free_limit(640, 650, 700, 200) is None  # within the headroom
    assert passive.free_limit(50, 60, 700, 200) == 200  # never below the minimum
    assert passive.free_limit(360, 365, 400, 100) is None  # saves less than 5% / 10 W


def test_summarize_passive_uncapped_and_capped():
    free = passive.summarize(snaps(301, power=250.0, reasons=()), None)[0]
    assert free.draw_p50_w == 250 and free.capped_share == 0
    assert free.energy_j == pytest.approx(75000) and free.energy_per_interval_j == pytest.approx(250)
    assert free.suggestion_w == 275 and "275 W would cost nothing" in free.note
    capped = passive.summarize(snaps(5), None)[0]
    assert capped.capped_share == 1 and capped.suggestion_w is None and "power cap" in capped.note
    unknown = passive.summarize(snaps(5, reasons=None), None)[0]
    assert unknown.capped_share is None and unknown.suggestion_w is None
    # #27: from 30 s a GPU that peaks over a longer cycle got a limit below its peaks
    short = passive.summarize(snaps(31, power=250.0, reasons=()), None)[0]
    assert short.suggestion_w is None and "watched 30 s, too short" in short.note
    assert "nvidia-smi" not in "\n".join(render.passive_lines([short]))
    missing = [Snapshot(host="h", time=float(t), backend="sim",
                        devices=(Device(index=0, power_draw_w=None, energy_j=None),))
               for t in range(3)]
    m = passive.summarize(missing, None)[0]
    assert m.draw_p95_w is None and m.energy_j is None and "no power readings" in m.note
    row = render.passive_lines([m])[2].split()
    assert row[5:7] == ["N/A", "N/A"]  # the range and the capped share: no unit on N/A


def cycling(seconds, period_s, low=250.0, high=500.0) -> list[Snapshot]:
    """A job drawing ``high`` for the first half of each ``period_s`` cycle, ``low`` after."""
    return [Snapshot(host="h", time=float(t), backend="sim",
                     devices=(dev(power=high if t % period_s < period_s / 2 else low,
                                  limit=700.0, reasons=()),))
            for t in range(seconds + 1)]


def test_the_passive_view_says_how_much_of_the_cycle_it_watched():
    """#27: nothing said that 30 s was half of the job's 60 s cycle."""
    short = passive.summarize(cycling(30, 60), None)[0]
    assert short.period_s is None
    assert "GPU 0 watched 30 s: no repeating cycle found in it" in render.passive_lines([short])
    six = passive.summarize(cycling(360, 60), None)[0]
    assert six.period_s == pytest.approx(60, abs=3) and six.suggestion_w == 550
    lines = render.passive_lines([six])
    at = lines.index("GPU 0 watched 6 min: 6 cycles of about 60 s")
    assert lines[at + 1] == "To apply the no-cost limits: sudo nvidia-smi -i 0 -pl 550"
    doc = render.passive_json(six)
    assert doc["period_s"] == pytest.approx(60, abs=3) and doc["cycles"] == pytest.approx(6, abs=0.3)
    assert doc["coverage"] == "watched 6 min: 6 cycles of about 60 s"


def test_no_limit_from_fewer_than_two_of_the_jobs_cycles():
    """Five minutes is not enough where the job's cycle is three: its peaks came once or twice."""
    few = passive.summarize(cycling(300, 180), None)[0]
    assert few.period_s == pytest.approx(180, abs=10)
    assert few.suggestion_w is None
    assert few.note.startswith("watched 5 min: 1.7 cycles of about 3 min, too few to suggest a"
                               " limit: watch 6 min or more (--window 360)")
    assert "nvidia-smi" not in "\n".join(render.passive_lines([few]))
    assert passive.summarize(cycling(360, 180), None)[0].suggestion_w == 550
    near = passive.summarize(cycling(300, 180, low=600, high=680), None)[0]
    assert near.note.startswith("draw near the limit")  # no limit to withhold: says why not


def test_a_recording_gets_the_analysis_without_commands():
    lines = render.passive_lines(passive.summarize(cycling(360, 60), None), RECORDING,
                                 commands=False)
    assert RECORDING in lines[0] and "nvidia-smi" not in "\n".join(lines)


# ------------------------------------------------------------------ proxies and rows
def window(limit, clock, tensor, dram, power, rate=None, n=5):
    samples = [Snapshot(host="h", time=float(t), backend="sim",
                        devices=(dev(power=power, energy=power * t, clock=clock, tensor=tensor,
                                     dram=dram, rate=rate),)) for t in range(n)]
    return curve.window(samples, [0], {0: limit})


def test_classify_picks_the_proxy_from_the_baseline():
    assert curve.classify(window(400, 1400, 60, 30, 300)).metric == "tensor_active_pct"
    mem = curve.classify(window(400, 1400, 8, 85, 300))
    assert mem.kind == "memory-bound" and mem.metric == "dram_bw_pct" and not mem.times_clock
    fp = curve.classify(window(400, 1400, 4, 10, 300))
    assert fp.metric == "sm_active_pct" and fp.times_clock  # no busy pipe: SM active x clock


def test_clock_drop_shows_in_compute_proxy_and_idle_samples_are_ignored():
    base = window(400, 1400, 60, 30, 300)
    slow = window(300, 1260, 60, 27, 250)  # per-cycle activity unchanged, clock -10%
    proxy = curve.classify(base)
    row = curve.step_row(300, base, slow, base, proxy, 400, 0.5)
    assert row.slowdown_pct == pytest.approx(10.0)
    assert row.saved_w == pytest.approx(50) and row.energy_change_pct < 0
    # An idle moment reports the max clock; it must not dilute the measured clock.
    samples = [Snapshot(host="h", time=float(t), backend="sim",
                        devices=(dev(clock=1980 if t == 2 else 1260,
                                     reasons=("gpu_idle",) if t == 2 else ()),)) for t in range(5)]
    assert curve.window(samples, [0], {0: 300}).gpus[0].clock_mhz == 1260


def test_aba_baseline_cancels_drift():
    before = window(400, 1400, 60, 30, 300)
    after = window(400, 1400, 54, 27, 300)  # the job itself slowed 10% (a new phase)
    b = window(300, 1400, 57, 28.5, 260)  # half way: the limit itself costs nothing
    row = curve.step_row(300, before, b, after, curve.classify(before), 400, 0.5)
    assert row.slowdown_pct == pytest.approx(0.0, abs=1e-9)
    assert row.spread_pct > 4  # the drift shows up as uncertainty, not as slowdown


def test_truth_and_error_on_the_simulator():
    a = window(400, 1400, 60, 30, 300, rate=1.0)
    b = window(300, 1330, 60, 28.5, 260, rate=0.96)
    row = curve.step_row(300, a, b, a, curve.classify(a), 400, 0.5)
    assert row.true_slowdown_pct == pytest.approx(4.0)
    assert row.error_pp == pytest.approx(row.slowdown_pct - 4.0)


def test_zeus_cost_and_recommendation():
    assert curve.zeus_cost(100.0, 2.0, 400.0, 0.5) == 50 + 400
    rows = [
        curve.Row(400, {}, 300, 0, None, 1.0, 0.0, None, 300, 0, 1.0, curve.zeus_cost(300, 1, 400, 0.5)),
        curve.Row(350, {}, 270, 30, None, 0.99, 1.0, 0.1, 272.7, -9, 1.1,
                  curve.zeus_cost(272.7, 1 / 0.99, 400, 0.5)),
        curve.Row(300, {}, 230, 70, None, 0.96, 4.0, 0.1, 239.6, -20, 1.25,
                  curve.zeus_cost(239.6, 1 / 0.96, 400, 0.5)),
        curve.Row(250, {}, 190, 110, None, 0.85, 15.0, 0.1, 211.1, -30, 1.4,
                  curve.zeus_cost(211.1, 1 / 0.85, 400, 0.5)),
    ]
    rec = recommend(rows, 5.0, 0.5)
    assert rec.limit_w == 300 and "within 5%" in rec.reason
    assert rec.cost_optimum_w == 300  # 239.6/2 + 400/0.96/2 beats 211.1/2 + 400/0.85/2
    energy_only = recommend([r.__class__(**{**r.__dict__, "cost": curve.zeus_cost(
        r.energy_per_work_j, 1 / r.rate, 400, 1.0)}) for r in rows], 5.0, 1.0)
    assert energy_only.cost_optimum_w == 250
    keep = recommend(rows[:1] + rows[3:], 5.0, 0.5)
    assert keep.limit_w == 400 and "keep the current limit" in keep.reason


# ------------------------------------------------------------------ plan
def test_step_and_candidates():
    assert default_step(700) == 35 and default_step(400) == 25 and default_step(None) == 25
    assert candidate_limits(700, 200, 35)[-3:] == [280, 245, 200]  # 210 is too close to 200
    assert candidate_limits(400, 100, 25)[:2] == [375, 350] and candidate_limits(400, 100, 25)[-1] == 100
    assert candidate_limits(200, 200, 35) == []


def test_plan_never_raises_a_limit_or_goes_below_a_minimum():
    devices = [dev(0, limit=400.0), dev(1, limit=300.0)]
    plan = make_plan(devices, SweepConfig(step_w=50, lowest_w=150))
    assert plan.candidates == (350, 300, 250, 200, 150)
    assert plan.limits_for(350) == {0: 350, 1: 300}
    assert plan.limits_for(150) == {0: 150, 1: 150}
    with pytest.raises(GputopError, match="is lost"):
        make_plan([dev(0, status="lost")], SweepConfig())


# ------------------------------------------------------------------ journal
def test_journal_written_before_change_and_removed_after_restore(adv):
    b = state_sim(adv)
    guard = journal.LimitGuard(b, [0, 2])
    j = guard.begin()
    doc = json.loads(j.path.read_text())
    assert doc["schema"] == journal.SCHEMA and doc["pid"] == os.getpid()
    assert [(d["index"], d["original_limit_w"]) for d in doc["devices"]] == [(0, 700.0), (2, 700.0)]
    assert j.path.parent == adv.xdg / "gputop" and j.path.name.startswith("power-limits-")
    guard.set({0: 500.0, 2: 450.0})
    assert b.power_limit(0) == 500
    with pytest.raises(GputopError, match="is changing GPU 0"):
        journal.LimitGuard(b, [0, 1]).begin()  # an overlapping run must not start meanwhile
    restored = guard.finish()
    assert sorted(restored) == [(0, 500.0, 700.0), (2, 450.0, 700.0)]
    assert not j.path.exists() and b.power_limit(0) == 700
    assert guard.finish() == []  # idempotent


def test_guard_restores_when_the_body_raises(adv):
    b = state_sim(adv)
    with pytest.raises(RuntimeError):
        with journal.LimitGuard(b, [1]) as guard:
            guard.set({1: 300.0})
            raise RuntimeError("boom")
    assert b.power_limit(1) == 700 and adv.journals() == []


def test_restore_matches_devices_by_uuid(adv):
    b = state_sim(adv)
    path = journal.journal_path(b.info().host, "sim", ["GPU-elsewhere"])
    j = journal.write(path, b.info().host, "sim", [journal.JournalEntry(0, "GPU-elsewhere", 500)])
    with pytest.raises(GputopError, match="names devices this node does not have"):
        journal.restore_from(b, j)
    assert path.exists()
    assert journal.leftovers(b) == []  # not this node's devices


def test_unreadable_journal_is_reported_not_a_traceback(adv):
    folder = adv.xdg / "gputop"
    folder.mkdir(parents=True)
    (folder / "power-limits-x.json").write_text("{not json")
    errors: list[str] = []
    assert journal.find("h", "sim", errors=errors) == [] and "unreadable" in errors[0]
    with pytest.raises(GputopError, match="unreadable"):
        journal.find("h", "sim")


def test_state_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert journal.state_dir() == tmp_path / "gputop"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/path")  # ignored, as the spec says
    monkeypatch.setenv("HOME", str(tmp_path))
    assert journal.state_dir() == tmp_path / ".local" / "state" / "gputop"


def test_nvidia_smi_commands_group_by_limit():
    assert nvidia_smi_commands({0: 700, 1: 700, 2: 650}) == [
        "sudo nvidia-smi -i 0,1 -pl 700", "sudo nvidia-smi -i 2 -pl 650"]


# ------------------------------------------------------------------ safety
def test_signal_guard_raises_once_then_records():
    import signal

    with SignalGuard() as guard:
        with pytest.raises(SignalExit) as caught:
            signal.raise_signal(signal.SIGTERM)
        assert caught.value.exit_code == 143 and caught.value.name == "SIGTERM"
        signal.raise_signal(signal.SIGHUP)  # disarmed now: noted, not raised
    assert guard.received == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_missing_privilege_on_nvml(monkeypatch):
    class FakeNvml:
        name = "nvml"

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr("gputop.advisor.safety._has_cap_sys_admin", lambda: False)
    why = missing_privilege(FakeNvml())
    assert "root or CAP_SYS_ADMIN" in why and "uid 1000" in why
    monkeypatch.setattr("gputop.advisor.safety._has_cap_sys_admin", lambda: True)
    assert missing_privilege(FakeNvml()) is None
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert missing_privilege(FakeNvml()) is None


def test_sim_no_permission_env(adv, monkeypatch):
    b = state_sim(adv)
    monkeypatch.setenv("GPUTOP_SIM_NO_PERMISSION", "1")
    with pytest.raises(NoPermission, match="CAP_SYS_ADMIN"):
        b.set_power_limit(0, 500)
    assert b.power_limit(0) == 700 and not adv.state.exists()


# ------------------------------------------------------------------ plot
def test_plot_is_plotext_text():
    rows = [curve.Row(w, {}, None, None, None, 1 - s / 100, s, None, None, None, None, None,
                      true_slowdown_pct=t)
            for w, s, t in [(700, 0, 0), (650, 1.0, 0.8), (600, 3.0, 2.7), (550, 6.0, 5.5)]]
    text = render.plot(rows, width=60, height=12, max_slowdown_pct=5)
    lines = text.splitlines()
    assert len(lines) == 12 and all(len(line) <= 60 for line in lines)
    assert "power limit (W)" in text and "●" in text and "true (simulator)" in text
    assert "\x1b[" not in text  # colourless unless asked
    assert "\x1b[" in render.plot(rows, width=60, height=12, color=True)


def test_plot_legend_is_under_the_canvas_not_over_the_data():
    # a curve that falls from the left: plotext's own legend box sat exactly there
    rows = [curve.Row(w, {}, None, None, None, 1 - s / 100, s, None, None, None, None, None,
                      true_slowdown_pct=t)
            for w, s, t in [(700, 9.0, 8.5), (650, 7.0, 6.0), (600, 3.0, 2.7), (550, 0.0, 0.5)]]
    lines = render.plot(rows, width=60, height=12, max_slowdown_pct=5).splitlines()
    top = next(i for i, line in enumerate(lines) if "┌" in line)
    bottom = next(i for i, line in enumerate(lines) if "└" in line)
    canvas = lines[top + 1:bottom]
    assert not any("measured" in line or "simulator" in line or "max 5%" in line
                   or "┌" in line or "└" in line for line in canvas)
    assert "●" in canvas[1] or "●" in canvas[0]  # the first point, top left, is drawn
    legend = lines[-1]
    assert bottom < len(lines) - 1
    assert all(s in legend for s in ("● measured slowdown %", "x true (simulator)", "· max 5%"))


def test_what_a_refused_sweep_needs_is_the_drivers_real_reason(monkeypatch):
    """#27: as root on a GPU that refuses limits it said `run gputop as root (sudo)`."""
    from gputop.advisor import safety
    from gputop.backends.base import NoPermission, Unsupported

    assert safety.what_is_needed(None) == safety.ROOT_OR_CAP  # the check before trying
    assert safety.what_is_needed(Unsupported("GPU 0 does not support setting a power limit")) \
        is None  # no command helps
    monkeypatch.setattr(safety.os, "geteuid", lambda: 0)
    as_root = safety.what_is_needed(NoPermission("NVML says Insufficient Permissions"))
    assert as_root is not None and "root" not in as_root.split(":")[0] and "refuses" in as_root
    monkeypatch.setattr(safety.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(safety, "_has_cap_sys_admin", lambda: False)
    assert safety.what_is_needed(NoPermission("x")) == safety.ROOT_OR_CAP
