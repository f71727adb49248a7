"""How saturated a GPU really is: measured where GPM exists, an honest fallback where it does not.

``nvidia-smi``'s GPU-Util is the share of time at least one kernel ran; a GPU reads 100% while
most of its SMs idle. NVML's GPM (Hopper and newer) measures SM activity, occupancy, tensor and
DRAM use per cycle. Without it, gputop shows what exists - time-based utilization, per-process
SM%, the SM clock against its maximum, clock-event reasons, power against the limit - and says
plainly that true saturation needs a GPM-capable GPU. Nothing here is an estimate shown as a
measurement: estimates (achieved TFLOPS, bandwidth) carry ``estimate`` in their names and labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputop.core import clock_events
from gputop.core.formatting import num
from gputop.core.model import Device, Hint, Snapshot

if TYPE_CHECKING:  # the peaks table is read only where an estimate is drawn
    from gputop.analysis.peaks import PeakSpec

NO_GPM_NOTE = (
    "No saturation measurement on this GPU: SM active, occupancy, tensor and DRAM bandwidth need "
    "NVML GPM (NVIDIA Hopper or newer with a driver that supports it). Shown instead: time-based "
    "readings - GPU-Util is busy time, not how much of the GPU is used."
)
NPU_NOTE = (
    "npu-smi reports no per-cycle core activity: only time-based utilization, clocks and power "
    "are shown. True saturation cannot be measured on this backend."
)
SIM_NOTE = "Simulated saturation (SIMULATED backend): figures come from the scenario's model."
AMD_NOTE = (
    "AMD GPUs report busy % (amdgpu's gpu_busy_percent, amd-smi's gfx activity), not SM activity: "
    "SM, occupancy, tensor and DRAM bandwidth are not measured, and the driver gives no "
    "clock-event (throttle) reasons. Shown: busy time, per-process engine time, the shader clock "
    "against its maximum, power against the cap."
)
INTEL_NOTE = (
    "Intel GPUs report busy time per GT (i915/xe idle residency), not EU activity: SM (EU), "
    "occupancy, tensor (XMX) and DRAM bandwidth are not measured, and the driver gives no "
    "clock-event (throttle) reasons. Shown: busy time, per-process engine time, the render clock "
    "against its maximum, power against the cap."
)
# Whose driver does not expose the per-cycle figures at all, by vendor (NVIDIA's would, with GPM).
_NOT_EXPOSED_BY = {"amd": "amdgpu", "intel": "i915/xe", "huawei": "npu-smi"}
UNMEASURED = "SM, occupancy, tensor, DRAM"

SHORT = {
    "device-unhealthy": "device unhealthy",
    "input-bound": "idle between steps, its feeding process is CPU-bound",
    "straggler": "the slow GPU of its job: the others wait for it",
    "thermal-throttled": "clocks lowered for heat",
    "power-capped": "clocks held down by the power limit",
    "underfilled": "busy but most SMs idle: kernels too small",
    "memory-bound": "limited by memory bandwidth, tensor cores mostly idle",
    "idle-allocated": "memory held, nothing running",
    "memory-nearly-full": "memory nearly full",
    "ecc-uncorrected": "uncorrectable memory errors",
    "row-remap-failed": "a memory row could not be remapped",
    "row-remap-pending": "a memory row remap waits for a GPU reset",
    "pages-pending": "retired memory pages wait for a reboot",
    "pcie-degraded": "PCIe link below its maximum",
    "xid": "the driver reported an Xid error",
}
_SEVERITY = {"critical": 0, "warning": 1, "info": 2}


def measured(dev: Device) -> bool:
    """True when the saturation figures were measured (GPM) or modelled (simulator)."""
    return dev.saturation.source is not None


def capability_note(dev: Device) -> str | None:
    """What this device cannot show, in words; None when GPM measures everything."""
    source = dev.saturation.source
    if source == "gpm":
        return None
    if source == "sim":
        return SIM_NOTE
    if dev.vendor == "huawei":
        return NPU_NOTE
    if dev.vendor == "amd":
        return AMD_NOTE
    if dev.vendor == "intel":
        return INTEL_NOTE
    return NO_GPM_NOTE


def unmeasured_line(dev: Device) -> str:
    """Say which per-cycle figures an unmeasured device lacks and why, in one short line: GPM
    would measure them on an NVIDIA GPU; another vendor's driver does not expose them at all."""
    who = _NOT_EXPOSED_BY.get(dev.vendor or "")
    if who is None:
        return f"not measured: {UNMEASURED} (needs GPM)"
    return f"not exposed by {who}: {UNMEASURED}"


def _unknown_why(dev: Device) -> str:
    who = _NOT_EXPOSED_BY.get(dev.vendor or "")
    return "no GPM" if who is None else f"not exposed by {who}"


@dataclass(frozen=True)
class FallbackView:
    """The time-based view for a device without GPM. Every value may be None (not reported)."""

    busy_pct: float | None  # GPU-Util: share of time a kernel ran
    process_sm_pct: float | None  # sum of per-process SM% (also time-based)
    clock_pct: float | None  # SM clock / its maximum
    slowdowns: tuple[str, ...]  # labels of active clock-event reasons that slow the GPU
    power_pct: float | None  # draw / limit
    note: str


def fallback_view(dev: Device) -> FallbackView:
    reasons = dev.clock_event_reasons or ()
    slow = tuple(clock_events.LABELS.get(r, r) for r in reasons if r in clock_events.SLOWDOWNS)
    return FallbackView(
        busy_pct=dev.utilization_gpu_pct,
        process_sm_pct=dev.process_sm_pct,
        clock_pct=dev.clock_sm_pct,
        slowdowns=slow,
        power_pct=dev.power_pct,
        note=capability_note(dev) or NO_GPM_NOTE,
    )


@dataclass(frozen=True)
class Estimates:
    """Achieved throughput *estimated* from measured activity shares and the part's dense peak."""

    spec: PeakSpec | None
    tensor_tflops_estimate: float | None
    tensor_peak_tflops: float | None
    dram_gbps_estimate: float | None
    dram_peak_gbps: float | None


def estimates(dev: Device, spec: PeakSpec | None = None) -> Estimates:
    """tensor ≈ tensor_active × (SM clock / max clock) × dense FP16 peak; DRAM ≈ dram_bw% × peak.

    Only where the shares were measured; a peak not in the table gives None, never a guess.
    """
    from gputop.analysis.peaks import match_part  # not loaded where no GPU measures shares

    spec = spec if spec is not None else match_part(dev.name)
    sat = dev.saturation
    tensor = dram = None
    tensor_peak = spec.tensor_tflops if spec else None
    bw_peak = spec.memory_bw_gbps if spec else None
    if measured(dev):
        if tensor_peak is not None and sat.tensor_active_pct is not None:
            clock = 1.0
            if dev.clock_sm_mhz is not None and dev.clock_sm_max_mhz:
                clock = min(1.0, dev.clock_sm_mhz / dev.clock_sm_max_mhz)
            tensor = sat.tensor_active_pct / 100.0 * clock * tensor_peak
        if bw_peak is not None and sat.dram_bw_pct is not None:
            dram = sat.dram_bw_pct / 100.0 * bw_peak
    return Estimates(spec, tensor, tensor_peak, dram, bw_peak)


def _waits_for(dev: Device, history: Sequence[Snapshot], hints: Sequence[Hint]) -> int | None:
    """The straggler of this device's job, if another GPU of the job is one."""
    slow = {h.device for h in hints if h.code == "straggler" and h.device != dev.index}
    if not slow or not history:
        return None
    from gputop.analysis.hints import jobs

    for gpus in jobs(history[-1].devices).values():
        if dev.index in gpus:
            for g in gpus:
                if g in slow:
                    return g
    return None


def _mig_verdict(dev: Device) -> str:
    """A MIG GPU has no utilization of its own: how many instances, and the busiest one's GPM."""
    from gputop.analysis.mig import busiest, sm_active

    top = busiest(dev.mig_instances)
    n = len({i.gpu_instance_id for i in dev.mig_instances})
    head = f"MIG: {n} GPU instance{'' if n == 1 else 's'}, utilization N/A"
    if top is None:
        return head + "; no instance's SM activity measured"
    return f"{head}; busiest {top.profile or '?'} (GI {top.gpu_instance_id}) SM {sm_active(top):.0f}%"


def verdict(dev: Device, history: Sequence[Snapshot] = (),
            hints: Sequence[Hint] | None = None) -> str:
    """One line: how loaded this GPU really is and, if it is not, why not.

    ``hints`` are the snapshot's hints when the caller has them (the sampler computed them once
    per tick); otherwise they are computed from ``history``.
    """
    if dev.status != "ok":
        return f"{dev.status}" + (f": {dev.status_reason}" if dev.status_reason else "")
    if hints is None:
        from gputop.analysis.hints import analyze

        hints = analyze(history) if history else []
    mine = sorted((h for h in hints if h.device == dev.index),
                  key=lambda h: _SEVERITY.get(h.severity, 9))
    if mine:
        top = mine[0]
        more = f" (+{len(mine) - 1} more)" if len(mine) > 1 else ""
        return f"{top.code}: {SHORT.get(top.code, top.message)}{more}"
    waits = _waits_for(dev, history, hints)
    if waits is not None:
        return f"waits for straggler GPU {waits} (busy {num(dev.utilization_gpu_pct, '.0f', '%')})"
    util = dev.utilization_gpu_pct
    if util is None and dev.mig_instances:
        return _mig_verdict(dev)
    if util is None:
        return "no utilization reading from this device"
    if util <= 5:
        return "idle" if not dev.processes else "allocated, not computing right now"
    sat = dev.saturation
    if measured(dev) and sat.sm_active_pct is not None:
        sm = sat.sm_active_pct
        tail = f", tensor {num(sat.tensor_active_pct, '.0f', '%')}" if sat.tensor_active_pct else ""
        state = "well fed" if sm >= 70 else "room to grow" if sm >= 40 else "SMs mostly idle"
        return f"{state}: busy {util:.0f}%, SM active {sm:.0f}%{tail}"
    view = fallback_view(dev)
    extra = ""
    if view.slowdowns:
        extra = f", slowed ({', '.join(view.slowdowns)}) to {num(view.clock_pct, '.0f', '%')} clock"
    return f"busy {util:.0f}% of the time{extra}; SM saturation unknown ({_unknown_why(dev)})"
