"""The honest fallback for devices without GPM, estimates against peaks, and verdicts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gputop.analysis import saturation as S
from gputop.core.model import Hint, Saturation
from tests.support.hint_fixtures import device, gpm, history, proc


def v100(**kw):
    """A pre-Hopper device: NVML gives no GPM, so saturation.source is None."""
    base = device(name="Tesla V100-SXM2-32GB", saturation=Saturation(), utilization_gpu_pct=100.0,
                  clock_sm_mhz=1312.0, clock_sm_max_mhz=1530.0, power_draw_w=300.0,
                  power_limit_w=300.0, memory_total_mib=32768.0,
                  clock_event_reasons=("sw_power_cap",),
                  processes=(proc(1, sm=60.0), proc(2, sm=30.0)))
    return replace(base, **kw)


def test_fallback_view_of_a_pre_hopper_device():
    view = S.fallback_view(v100())
    assert view.busy_pct == 100.0
    assert view.process_sm_pct == 90.0
    assert view.clock_pct == pytest.approx(100 * 1312 / 1530)
    assert view.slowdowns == ("power cap",)
    assert view.power_pct == pytest.approx(100.0)
    assert "GPM" in view.note and "Hopper" in view.note


def test_fallback_keeps_unreported_values_as_none():
    view = S.fallback_view(v100(clock_sm_mhz=None, processes=(), power_draw_w=None,
                                clock_event_reasons=None))
    assert (view.clock_pct, view.process_sm_pct, view.power_pct) == (None, None, None)
    assert view.slowdowns == ()


def test_no_estimate_without_a_measurement():
    est = S.estimates(v100())
    assert est.spec is not None and est.spec.key == "v100-sxm2"
    assert est.tensor_tflops_estimate is None and est.dram_gbps_estimate is None


def test_estimates_from_measured_shares_and_the_dense_peak():
    dev = device(clock_sm_mhz=990.0, saturation=gpm(tensor=50.0, dram=40.0))
    est = S.estimates(dev)
    assert est.tensor_tflops_estimate == pytest.approx(0.5 * 0.5 * 989.4)
    assert est.dram_gbps_estimate == pytest.approx(0.4 * 3350)


def test_no_estimate_for_a_part_without_checked_peaks():
    est = S.estimates(device(name="Ascend910B3", vendor="huawei", saturation=gpm(source="sim")))
    assert est.tensor_tflops_estimate is None and est.dram_gbps_estimate is None
    assert est.spec is not None  # known part, but no checked figure


def test_capability_notes():
    assert S.capability_note(device(saturation=gpm(source="gpm"))) is None
    assert "SIMULATED" in S.capability_note(device(saturation=gpm(source="sim")))
    assert "GPM" in S.capability_note(v100())
    assert "npu-smi" in S.capability_note(v100(vendor="huawei", name="Ascend910B3"))


def test_verdict_without_gpm_says_what_it_cannot_know():
    text = S.verdict(v100(), hints=[])
    assert "busy 100%" in text and "no GPM" in text and "power cap" in text


def test_verdict_prefers_the_most_severe_hint():
    hints = [Hint(0, "memory-bound", "info", "m"), Hint(0, "thermal-throttled", "warning", "t"),
             Hint(1, "straggler", "warning", "s")]
    assert S.verdict(device(0), hints=hints).startswith("thermal-throttled:")
    assert "(+1 more)" in S.verdict(device(0), hints=hints)


def test_verdict_for_a_healthy_measured_gpu():
    assert S.verdict(device(), hints=[]).startswith("well fed: busy 97%, SM active 85%")
    assert S.verdict(device(saturation=gpm(sm=30.0)), hints=[]).startswith("SMs mostly idle")


def test_verdict_names_the_straggler_its_job_waits_for():
    h = history(1, lambda i: [device(0, processes=(proc(1, command="train.py --local_rank=0"),)),
                              device(1, processes=(proc(2, command="train.py --local_rank=1"),))])
    hints = [Hint(1, "straggler", "warning", "slow")]
    assert S.verdict(h[-1].devices[0], h, hints) .startswith("waits for straggler GPU 1")


def test_verdict_computes_hints_from_history_when_not_given():
    h = history(30, lambda i: [device(utilization_gpu_pct=99.0, saturation=gpm(sm=20.0))])
    assert S.verdict(h[-1].devices[0], h).startswith("underfilled:")


def test_verdict_for_lost_and_idle_devices():
    assert S.verdict(device(status="lost", status_reason="fell off the bus"), hints=[]) == \
        "lost: fell off the bus"
    assert S.verdict(device(utilization_gpu_pct=0.0, processes=()), hints=[]) == "idle"
    assert S.verdict(device(utilization_gpu_pct=None), hints=[]).startswith("no utilization")


def amd(**kw):
    """An AMD GPU as the amdgpu backend fills it: busy %, clocks and power, no GPM, no reasons."""
    return v100(name="AMD Radeon RX 7900 XTX", vendor="amd", clock_event_reasons=None, **kw)


def test_an_amd_or_intel_gpu_says_its_vendor_does_not_expose_sm_figures():
    note = S.capability_note(amd())
    assert "gpu_busy_percent" in note and "not SM activity" in note and "GPM" not in note
    intel = S.capability_note(v100(vendor="intel", clock_event_reasons=None))
    assert "i915/xe" in intel and "GPM" not in intel
    assert S.unmeasured_line(amd()) == "not exposed by amdgpu: SM, occupancy, tensor, DRAM"
    assert S.unmeasured_line(v100()) == "not measured: SM, occupancy, tensor, DRAM (needs GPM)"
    verdict = S.verdict(amd(), hints=[])
    assert verdict.endswith("SM saturation unknown (not exposed by amdgpu)"), verdict
