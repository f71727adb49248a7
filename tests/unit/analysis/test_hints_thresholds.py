"""Hint thresholds at their edges, on synthetic snapshot histories."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gputop.analysis import hints as H
from gputop.core.model import Saturation
from tests.support.hint_fixtures import NOW, codes, device, gpm, history, proc


def low_share_history(n_low: int, n: int = 100, cpu: float = 100.0):
    """n samples 0.5 s apart (inside the 60 s window); the first n_low have util 0."""
    return history(n, lambda i: [device(utilization_gpu_pct=0.0 if i < n_low else 87.0,
                                        processes=(proc(cpu=cpu),))], dt=0.5)


# ---------------------------------------------------------------- input-bound
def test_input_bound_fires_at_its_low_share():
    assert "input-bound" in codes(H.analyze(low_share_history(30)))


def test_input_bound_quiet_just_below_its_low_share():
    assert "input-bound" not in codes(H.analyze(low_share_history(29)))


def test_input_bound_needs_a_cpu_bound_feeder():
    assert "input-bound" in codes(H.analyze(low_share_history(60, cpu=90.0)))
    assert "input-bound" not in codes(H.analyze(low_share_history(60, cpu=89.9)))
    assert "input-bound" not in codes(H.analyze(low_share_history(60, cpu=None)))


def test_input_bound_needs_some_work():
    # never busy: that is idle, not input-bound
    h = history(100, lambda i: [device(utilization_gpu_pct=0.0, processes=(proc(cpu=100),))],
                dt=0.5)
    assert "input-bound" not in codes(H.analyze(h))


# ---------------------------------------------------------------- underfilled
@pytest.mark.parametrize("util,sm,fires", [(90.0, 49.9, True), (90.0, 50.0, False),
                                           (89.9, 30.0, False)])
def test_underfilled_edges(util, sm, fires):
    h = history(30, lambda i: [device(utilization_gpu_pct=util, saturation=gpm(sm=sm))])
    assert ("underfilled" in codes(H.analyze(h))) is fires


def test_underfilled_needs_a_measurement():
    sat = replace(gpm(sm=20.0), source=None)
    h = history(30, lambda i: [device(utilization_gpu_pct=99.0, saturation=sat)])
    assert "underfilled" not in codes(H.analyze(h))


# ---------------------------------------------------------------- memory-bound
@pytest.mark.parametrize("dram,tensor,fires", [(60.0, 19.9, True), (59.9, 5.0, False),
                                               (90.0, 20.0, False)])
def test_memory_bound_edges(dram, tensor, fires):
    h = history(30, lambda i: [device(saturation=gpm(dram=dram, tensor=tensor))])
    found = [x for x in H.analyze(h) if x.code == "memory-bound"]
    assert bool(found) is fires
    assert all(x.severity == "info" for x in found)


# ---------------------------------------------------------------- power-capped
def capped_history(n_capped: int, limit: float, n: int = 40):
    def make(i):
        capped = i < n_capped
        return [device(power_limit_w=limit, clock_sm_mhz=1760.0 if capped else 1980.0,
                       clock_event_reasons=("sw_power_cap",) if capped else ())]
    return history(n, make)


def test_power_capped_at_half_the_window_with_a_lowered_limit_is_a_warning():
    found = [x for x in H.analyze(capped_history(20, 400.0)) if x.code == "power-capped"]
    assert len(found) == 1 and found[0].severity == "warning"
    assert "400 W (default 700 W)" in found[0].message


def test_power_capped_quiet_below_half():
    assert "power-capped" not in codes(H.analyze(capped_history(19, 400.0)))


def test_power_capped_at_the_default_limit_is_only_info():
    found = [x for x in H.analyze(capped_history(40, 700.0)) if x.code == "power-capped"]
    assert [x.severity for x in found] == ["info"]


# ---------------------------------------------------------------- thermal-throttled
@pytest.mark.parametrize("n_hot,reason,expect", [
    (10, "sw_thermal_slowdown", "warning"), (9, "sw_thermal_slowdown", None),
    (10, "hw_thermal_slowdown", "critical")])
def test_thermal_edges(n_hot, reason, expect):
    h = history(50, lambda i: [device(clock_event_reasons=(reason,) if i < n_hot else ())])
    found = [x.severity for x in H.analyze(h) if x.code == "thermal-throttled"]
    assert found == ([expect] if expect else [])


# ---------------------------------------------------------------- straggler
def job(n_gpus: int, slow: int, slow_clock: float, command: str = "torchrun pretrain.py"):
    def make(i):
        out = []
        for g in range(n_gpus):
            clock = slow_clock if g == slow else 1980.0
            out.append(device(g, clock_sm_mhz=clock, processes=(
                proc(100 + g, command=f"{command} --local_rank={g}"),)))
        return out
    return history(30, make)


def test_straggler_fires_at_ten_percent_below_its_peers():
    found = [x for x in H.analyze(job(8, 5, 1782.0)) if x.code == "straggler"]
    assert [x.device for x in found] == [5]


def test_straggler_quiet_at_nine_percent():
    assert "straggler" not in codes(H.analyze(job(8, 5, 1802.0)))


def test_straggler_in_a_two_gpu_job_flags_the_slow_one_only():
    found = [x.device for x in H.analyze(job(2, 0, 1500.0)) if x.code == "straggler"]
    assert found == [0]


def test_gpus_of_different_jobs_are_not_compared():
    def make(i):
        return [device(0, clock_sm_mhz=1980.0, processes=(proc(1, command="python a.py"),)),
                device(1, clock_sm_mhz=1200.0, processes=(proc(2, command="python b.py"),))]
    assert "straggler" not in codes(H.analyze(history(30, make)))


def test_straggler_by_busy_time_when_peers_wait():
    def make(i):
        return [device(g, utilization_gpu_pct=99.0 if g == 2 else 70.0, processes=(
            proc(10 + g, command=f"python ddp.py --rank {g}"),)) for g in range(4)]
    found = [x.device for x in H.analyze(history(30, make)) if x.code == "straggler"]
    assert found == [2]


def test_job_key_strips_rank_arguments_only():
    a = H.job_key("alice", "python train.py --local_rank=3 --lr 1e-4")
    assert a == H.job_key("alice", "python train.py --local-rank 0 --lr 1e-4")
    assert a != H.job_key("bob", "python train.py --local_rank=3 --lr 1e-4")
    assert a != H.job_key("alice", "python train.py --local_rank=3 --lr 3e-4")
    assert H.job_key("alice", None) is None


# ---------------------------------------------------------------- idle-allocated
def idle_history(seconds: float, started_ago: float, util_blip: bool = False, mem: float = 30720):
    n = int(seconds) + 1

    def make(i):
        util = 2.0 if util_blip and i == n // 2 else 0.0  # a kernel ran: SM active with it
        return [device(7, utilization_gpu_pct=util, saturation=gpm(util, 0, 0, 0), processes=(
            proc(77, user="erin", command="python -m ipykernel_launcher", cpu=0.0, sm=0.0,
                 mem=mem, started=NOW - started_ago),))]
    return history(n, make)


def test_idle_allocated_with_an_old_process_after_thirty_seconds():
    found = [x for x in H.analyze(idle_history(30, 9000)) if x.code == "idle-allocated"]
    assert [x.device for x in found] == [7]
    assert "30.0 GiB" in found[0].message and "erin" in found[0].message


def test_idle_allocated_needs_thirty_seconds_observed():
    assert "idle-allocated" not in codes(H.analyze(idle_history(29, 9000)))


def test_idle_allocated_not_for_a_young_process_idle_briefly():
    assert "idle-allocated" not in codes(H.analyze(idle_history(60, 100)))


def test_idle_allocated_for_a_young_process_idle_for_minutes():
    assert "idle-allocated" in codes(H.analyze(idle_history(300, 310)))


def test_idle_allocated_broken_by_any_activity():
    assert "idle-allocated" not in codes(H.analyze(idle_history(60, 9000, util_blip=True)))


def test_idle_allocated_is_judged_by_gpm_where_the_gpu_has_it():
    """Utilization counts the time any kernel ran, on one SM or all: where GPM measures SM
    activity, that is what idle means, as the idle ledger judges it (gputop.analysis.waste)."""
    def make(i):
        return [device(7, utilization_gpu_pct=3.0, saturation=gpm(0.4, 0, 0, 0), processes=(
            proc(77, user="erin", cpu=0.0, sm=0.0, mem=30720, started=NOW - 9000),))]
    (found,) = [x for x in H.analyze(history(61, make)) if x.code == "idle-allocated"]
    assert "with 0% SM activity" in found.message


def test_idle_allocated_needs_memory_held():
    assert "idle-allocated" not in codes(H.analyze(idle_history(60, 9000, mem=1000)))


# ---------------------------------------------------------------- instantaneous hints
def test_memory_nearly_full_edges():
    full = device(memory_used_mib=0.95 * 81559)
    almost = device(memory_used_mib=0.949 * 81559)
    assert "memory-nearly-full" in codes(H.analyze(history(1, lambda i: [full])))
    assert "memory-nearly-full" not in codes(H.analyze(history(1, lambda i: [almost])))


def test_lost_device_is_critical_and_gets_no_other_hint():
    lost = device(3, status="lost", status_reason="GPU has fallen off the bus",
                  utilization_gpu_pct=None)
    found = H.analyze(history(30, lambda i: [device(0), lost]))
    mine = [x for x in found if x.device == 3]
    assert [(x.code, x.severity) for x in mine] == [("device-unhealthy", "critical")]


def test_every_hint_has_advice_and_a_known_code():
    from gputop.core.model import HINT_CODES

    assert set(H.ADVICE) == set(HINT_CODES)


# ---------------------------------------------------------------- the window is bounded
def test_only_the_recent_window_counts():
    # thermal slowdown 100 s ago, then 60 s of normal running: no hint
    h = history(160, lambda i: [device(clock_event_reasons=("sw_thermal_slowdown",)
                                       if i < 90 else ())])
    assert "thermal-throttled" not in codes(H.analyze(h))
    assert len(H.recent_window(h)) == 61


def test_window_walks_back_only_as_far_as_needed():
    h = history(600, lambda i: [device()])
    window = H.recent_window(h, seconds=60.0, max_samples=240)
    assert [s.time for s in window] == [s.time for s in h[-61:]]
    assert len(H.recent_window(history(600, lambda i: [device()], dt=0.1))) == 240


def test_empty_history():
    assert H.analyze([]) == []


def test_device_missing_from_some_snapshots():
    def make(i):
        return [device(0)] if i % 2 else [device(0), device(1, saturation=Saturation())]
    H.analyze(history(40, make))  # must not raise


# ---------------------------------------------------------------- health (#27)
def _health(**kw) -> list:
    return [(h.code, h.severity, h.message) for h in H.analyze(history(1, lambda i: [device(**kw)]))
            if h.code in ("ecc-uncorrected", "row-remap-failed", "row-remap-pending",
                          "pages-pending", "pcie-degraded", "xid")]


def test_each_health_problem_is_one_hint_with_its_reason():
    assert _health(ecc_errors_uncorrected_volatile=12) == [
        ("ecc-uncorrected", "critical", "GPU 0 has 12 uncorrectable ECC errors since the driver loaded")]
    assert _health(remapped_rows_pending=True) == [
        ("row-remap-pending", "warning", "GPU 0 has a memory row remap waiting for the next GPU reset")]
    assert [c for c, _, _ in _health(remapped_rows_pending=True, remapped_rows_failed=True)] == [
        "row-remap-failed"]  # the failure says more than the pending remap
    assert [c for c, _, _ in _health(retired_pages_pending=True)] == ["pages-pending"]
    # the figures behind each, where the device reports them (the saturation panel's detail)
    assert _health(ecc_errors_uncorrected_volatile=12, ecc_errors_uncorrected_aggregate=40,
                   ecc_errors_corrected_volatile=3)[0][2] == (
        "GPU 0 has 12 uncorrectable ECC errors since the driver loaded (40 over its lifetime, 3"
        " corrected since the driver loaded)")
    assert _health(remapped_rows_failed=True, remapped_rows_uncorrectable=2,
                   remapped_rows_correctable=0)[0][2] == (
        "GPU 0 failed to remap a memory row with errors (2 rows remapped for uncorrectable"
        " errors, 0 for correctable ones)")
    assert _health(retired_pages_pending=True, retired_pages_dbe=1, retired_pages_sbe=5)[0][2] == (
        "GPU 0 has retired memory pages waiting for the next reboot (1 retired for double-bit"
        " errors, 5 for single-bit ones)")
    # an Xid seen only as the last one (not as it came) is still named by NVIDIA's catalog
    assert _health(xid_last=79) == [
        ("xid", "critical", "GPU 0 Xid 79 (GPU has fallen off the bus): the last since gputop"
                            " started, not seen as it came — drain the node and reboot it")]
    assert _health(pcie_width=4, pcie_width_max=16) == [
        ("pcie-degraded", "warning", "GPU 0's PCIe link runs x4 of its x16")]


def test_a_healthy_gpu_and_an_idle_link_give_none():
    assert _health(ecc_errors_uncorrected_volatile=0, remapped_rows_pending=False,
                   remapped_rows_failed=False, retired_pages_pending=False, xid_last=0,
                   pcie_width=16, pcie_width_max=16) == []
    # an idle link drops its generation to save power: only a busy one is degraded
    assert _health(pcie_gen=1, pcie_gen_max=5, utilization_gpu_pct=0.0) == []
    assert [m for _, _, m in _health(pcie_gen=3, pcie_gen_max=5, utilization_gpu_pct=87.0)] == [
        "GPU 0's PCIe link runs Gen 3 of its Gen 5 while busy"]


def test_an_amd_straggler_is_not_said_to_lack_a_reason_its_driver_never_gives():
    """amdgpu gives no clock-event reasons (None, not ()): the slow clock is still found, and
    no hint that needs NVIDIA's reasons (power-capped, thermal-throttled) is computed."""
    h = [replace(s, devices=tuple(replace(d, vendor="amd", clock_event_reasons=None)
                                  for d in s.devices)) for s in job(2, 0, 1500.0)]
    found = H.analyze(h)
    assert [x.code for x in found] == ["straggler"]
    assert "(its driver reports no clock-event reasons)" in found[0].message
    assert "(no reason reported)" in [x for x in H.analyze(job(2, 0, 1500.0))
                                      if x.code == "straggler"][0].message


@pytest.mark.parametrize("values", [[3.0], [5, 1, 4], [2.0, 8.0], [7, 1, 3, 5], [0.1, 0.7, 0.2, 0.4]])
def test_the_hints_median_is_the_standard_librarys(values):
    import statistics

    assert H._median(values) == statistics.median(values)
