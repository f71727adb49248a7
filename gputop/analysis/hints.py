"""Hints: why a GPU is not busier, as pure functions over the sampler's history.

Every hint is computed from a bounded recent window (oldest first), so the cost per tick does not
grow with the history length: the sampler's history keeps it as typed columns of what the hints
read (gputop.history.window); a list of snapshots is read into the same columns first.
Thresholds are module constants; docs/saturation.md documents them. They are chosen to hold on
real GPUs, not only on the simulator: each one is a pattern that practitioners read off
nvidia-smi/DCGM by hand.

Window: the last ``WINDOW_S`` seconds (at most ``WINDOW_MAX_SAMPLES`` samples). A history-based
hint needs at least ``MIN_SAMPLES`` samples spanning ``MIN_SPAN_S`` seconds; before that only the
instantaneous hints (memory-nearly-full, device-unhealthy) can appear.

Hints and their thresholds (shares are of the samples in the window):

- ``input-bound`` (warning): utilization <= ``LOW_UTIL_PCT`` in >= ``INPUT_LOW_SHARE`` of the
  samples, the GPU did work in >= ``INPUT_BUSY_SHARE`` of them (util >= ``BUSY_UTIL_PCT``), and the
  busiest process on it runs at >= ``CPU_BOUND_PCT`` % of a core (median): the feeding process is
  CPU-bound while the GPU waits between steps.
- ``underfilled`` (warning): needs measured saturation (GPM or simulator): mean utilization
  >= ``UNDERFILLED_BUSY_PCT`` while mean SM active < ``UNDERFILLED_SM_PCT``.
- ``memory-bound`` (info): needs measured saturation: while busy, mean DRAM bandwidth
  >= ``MEMBOUND_DRAM_PCT`` % of peak and mean tensor activity < ``MEMBOUND_TENSOR_PCT``.
- ``power-capped`` (warning when the limit is below the default, info at the default): the
  software power cap is active in >= ``CAPPED_SHARE`` of the samples.
- ``thermal-throttled`` (warning; critical for hardware thermal slowdown): a thermal slowdown
  reason is active in >= ``THERMAL_SHARE`` of the samples.
- ``straggler`` (warning): GPUs are grouped into jobs by their processes' user and command (rank
  arguments stripped). In a job of two or more GPUs, a GPU whose median SM clock while busy is
  >= ``STRAGGLER_CLOCK_GAP`` below the median of its peers, or whose mean utilization is
  >= ``STRAGGLER_BUSY_GAP_PCT`` points above its peers' median while they wait (their median
  <= ``STRAGGLER_PEER_MAX_BUSY_PCT``), is the one the others wait for.
- ``idle-allocated`` (warning): SM activity (GPM's SM active where measured, else utilization;
  `activity_pct`) <= ``IDLE_UTIL_PCT`` in every sample of at least
  ``IDLE_MIN_OBSERVED_S`` seconds, >= ``IDLE_MIN_MEMORY_MIB`` MiB held, and either the idle run
  spans ``IDLE_MINUTES_S`` seconds or the holding processes started more than that long ago.
- ``memory-nearly-full`` (warning): memory used >= ``MEMORY_FULL_PCT`` % of the total (latest).
- ``device-unhealthy`` (critical): the device's status is not "ok" (lost, error).

Under MIG the parent GPU reports no utilization and its memory and processes belong to its
instances: ``idle-allocated`` and ``memory-nearly-full`` are judged per instance (idle: the
instance's SM activity, measured by GPM, <= ``IDLE_UTIL_PCT``; an unmeasured instance is never
called idle), carry the instance's ``gpu_instance_id`` and name it ("GPU 2 MIG 3g.40gb (GI 1)").
A MIG GPU is never a straggler's peer: its instances run different jobs on different shares of
one clock, and instances of different sizes are not peers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import reduce
from itertools import compress
from operator import or_
from typing import cast

from gputop.analysis.jobs import gpu_list, job_name
from gputop.analysis.mig import instance_name, sm_active
from gputop.analysis.xid import ExplainedXid, XidLog, catalog
from gputop.core import clock_events
from gputop.core.model import Device, Hint, MigInstance, Process, Snapshot
from gputop.core.units import MIB_PER_GIB
from gputop.history import History
from gputop.history.fields import INSTANCE_COLUMNS, WINDOW_COLUMNS, top_sm_pct
from gputop.history.frames import NA
from gputop.history.window import DeviceWindow, Window, values

# ---------------------------------------------------------------- thresholds (documented above)
WINDOW_S = 60.0
WINDOW_MAX_SAMPLES = 240
MIN_SAMPLES = 10
MIN_SPAN_S = 15.0

BUSY_UTIL_PCT = 50.0
LOW_UTIL_PCT = 10.0
INPUT_LOW_SHARE = 0.30
INPUT_BUSY_SHARE = 0.05
CPU_BOUND_PCT = 90.0

UNDERFILLED_BUSY_PCT = 90.0
UNDERFILLED_SM_PCT = 50.0

MEMBOUND_DRAM_PCT = 60.0
MEMBOUND_TENSOR_PCT = 20.0

CAPPED_SHARE = 0.5
THERMAL_SHARE = 0.2

STRAGGLER_CLOCK_GAP = 0.10
STRAGGLER_BUSY_GAP_PCT = 20.0
STRAGGLER_PEER_MAX_BUSY_PCT = 85.0
STRAGGLER_POWER_GAP = 0.25  # the cluster's job view only: a node's hint has clocks

IDLE_UTIL_PCT = 1.0
IDLE_MIN_OBSERVED_S = 30.0
IDLE_MINUTES_S = 300.0
IDLE_MIN_MEMORY_MIB = 1024.0

MEMORY_FULL_PCT = 95.0

# The hardware power brake is an external signal (PSU, chassis), not the limit: it is left out so
# that the advice (raise the limit) stays right.
POWER_REASONS = frozenset({"sw_power_cap"})
THERMAL_REASONS = frozenset({"sw_thermal_slowdown", "hw_thermal_slowdown"})
HW_THERMAL_REASONS = frozenset({"hw_thermal_slowdown"})
IDLE_REASONS = frozenset({"gpu_idle"})
_BITS = {reasons: clock_events.encode(sorted(reasons))
         for reasons in (POWER_REASONS, THERMAL_REASONS, HW_THERMAL_REASONS, IDLE_REASONS)}

ADVICE = {
    "input-bound": "feed it faster: raise DataLoader num_workers, prefetch_factor and "
                   "pin_memory=True, move decoding/augmentation off the training loop",
    "underfilled": "give each kernel more work: a larger batch, fused kernels "
                   "(torch.compile, CUDA graphs), fewer tiny launches",
    "memory-bound": "raise arithmetic intensity: bigger batches, fused kernels, lower-precision "
                    "weights or KV cache (FP8/INT8); normal for LLM decode",
    "power-capped": "raise the power limit (nvidia-smi -i N -pl W) if throughput matters more "
                    "than watts; `gputop advise` shows the trade-off",
    "thermal-throttled": "check airflow, fans, inlet temperature and the heatsink; a GPU much "
                         "hotter than its neighbours points at its own cooling",
    "straggler": "fix this GPU (its clock, cooling or its rank's extra work): every all-reduce "
                 "waits for it, so the whole job runs at its speed",
    "idle-allocated": "free it: stop the idle process (a forgotten notebook kernel?) or release "
                      "cached memory, so others can use this GPU",
    "memory-nearly-full": "expect out-of-memory errors: reduce batch or sequence length, enable "
                          "activation checkpointing; expected if a serving engine pre-allocates",
    "device-unhealthy": "check `dmesg` for Xid errors and the GPU's health; reset or drain the node",
    "ecc-uncorrected": "drain the node and reset the GPU; if the errors come back, replace the GPU",
    "row-remap-failed": "the GPU cannot hide this memory fault: drain the node and replace the GPU",
    "row-remap-pending": "reset the GPU (or reboot) when its jobs allow, to apply the remap",
    "pages-pending": "reboot when its jobs allow, so the driver retires the pages",
    "pcie-degraded": "reseat the GPU or its riser, check the slot and BIOS link settings: "
                     "transfers to and from this GPU are slower",
    # the Xid hint's own advice is the catalog's action for its code (xid_hint); this is what
    # is left when even the code is not known
    "xid": "look the Xid up in NVIDIA's Xid catalog and `dmesg`; restart the job, or reset the "
           "GPU if it recurs",
}

_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
_RANK_ARG = re.compile(r"\s--?(local[_-]rank|rank|worker|node[_-]rank)(=|\s+)\d+")


# ---------------------------------------------------------------- windows
def recent_window(history: Sequence[Snapshot], seconds: float | None = None,
                  max_samples: int | None = None) -> list[Snapshot]:
    """The snapshots of the last ``seconds`` (oldest first), walking back from the newest only."""
    if not history:
        return []
    seconds = WINDOW_S if seconds is None else seconds
    max_samples = WINDOW_MAX_SAMPLES if max_samples is None else max_samples
    newest = history[-1].time
    out: list[Snapshot] = []
    for i in range(len(history) - 1, max(-1, len(history) - 1 - max_samples), -1):
        snap = history[i]
        if newest - snap.time > seconds + 1e-9:
            break
        out.append(snap)
    out.reverse()
    return out


class Series:
    """One device's readings over the window, oldest first: a column per field of
    `gputop.history.fields.WINDOW_FIELDS`, each read once and only where a check asks for it,
    and its newest reading."""

    __slots__ = ("_columns", "_masks", "_union", "_utils", "index", "latest", "span_s", "times",
                 "window")

    def __init__(self, window: DeviceWindow) -> None:
        self.window = window
        self.index = window.index
        self.times = window.times
        self.latest = window.latest
        self.span_s = self.times[-1] - self.times[0] if self.times else 0.0
        self._columns: dict[str, list[float | None]] = {}
        self._masks: list[int | None] | None = None
        self._utils: list[float] | None = None
        self._union: int | None = None  # every reason any reading held; None: none reported

    def column(self, name: str) -> list[float | None]:
        found = self._columns.get(name)
        if found is None:
            found = self._columns[name] = values(self.window.columns[WINDOW_COLUMNS[name]])
        return found

    def enough(self) -> bool:
        return len(self.times) >= MIN_SAMPLES and self.span_s >= MIN_SPAN_S

    def utils(self) -> list[float]:
        if self._utils is None:
            self._utils = [u for u in self.column("utilization_gpu_pct") if u is not None]
        return self._utils

    def masks(self) -> list[int | None]:
        """Each reading's clock-event bit mask (None: no reasons reported)."""
        if self._masks is None:
            raw = self.window.columns[WINDOW_COLUMNS["clock_events"]]
            if NA not in raw:  # reasons reported in every reading: NVML's case
                masks: list[int | None] = list(map(int, raw))
            else:
                masks = [None if m == NA else int(m) for m in raw]
            reported = [m for m in masks if m is not None]
            self._union = reduce(or_, reported, 0) if reported else None
            self._masks = masks
        return self._masks

    def holding(self, reasons: frozenset[str]) -> list[bool]:
        """Whether each reading held any of the clock-event ``reasons``."""
        bits = _BITS[reasons]
        masks = self.masks()
        if not (self._union or 0) & bits:  # none held them: most GPUs, most of the time
            return [False] * len(masks)
        return [m is not None and bool(m & bits) for m in masks]

    def share_holding(self, reasons: frozenset[str]) -> float:
        """The share of the readings that held any of the clock-event ``reasons``."""
        n = len(self.times)
        return sum(self.holding(reasons)) / n if n else 0.0

    def why_slow(self) -> str:
        """`slow_clock_why` of the readings: the reasons any of them held, as names."""
        self.masks()
        return held_why([None if self._union is None else clock_events.decode(self._union)])

    def all_idle(self) -> bool:
        """Whether every reading was idle (`idle_state`), read until one was not."""
        columns = self.window.columns
        for sm, util, top in zip(columns[WINDOW_COLUMNS["sm_active_pct"]],
                                 columns[WINDOW_COLUMNS["utilization_gpu_pct"]],
                                 columns[WINDOW_COLUMNS["top_process_sm_pct"]], strict=True):
            activity = sm if sm != NA else None if util == NA else util
            if idle_reading(activity, None if top == NA else top) is not True:
                return False
        return True

    def instance_idle(self, inst: MigInstance) -> bool:
        """Whether the MIG instance of ``inst``'s ids was there and idle in every reading."""
        found = self.window.instances.get((inst.gpu_instance_id, inst.compute_instance_id))
        if found is None or len(found[0]) != len(self.times):
            return False
        columns = found[1]
        return all(idle_reading(sm, top) is True
                   for sm, top in zip(values(columns[INSTANCE_COLUMNS["sm_active_pct"]]),
                                      values(columns[INSTANCE_COLUMNS["top_process_sm_pct"]]),
                                      strict=True))


def device_series(windows: Sequence[DeviceWindow]) -> dict[int, Series]:
    return {w.index: Series(w) for w in windows}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _median(values: Sequence[float]) -> float:
    """Return the median of ``values`` (not empty), as `statistics.median` does: here, because
    that module costs the dashboard 0.1 MB for this one function (#26)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _hint(index: int | None, code: str, severity: str, message: str,
          gpu_instance_id: int | None = None) -> Hint:
    return Hint(device=index, code=code, severity=severity, message=message, advice=ADVICE[code],
                gpu_instance_id=gpu_instance_id)


# ---------------------------------------------------------------- single-device hints
def input_bound(s: Series) -> Hint | None:
    if not s.enough():
        return None
    utils = s.utils()
    if len(utils) < MIN_SAMPLES:
        return None
    low = sum(1 for u in utils if u <= LOW_UTIL_PCT) / len(utils)
    busy = sum(1 for u in utils if u >= BUSY_UTIL_PCT) / len(utils)
    if low < INPUT_LOW_SHARE or busy < INPUT_BUSY_SHARE:
        return None
    cpu = _feeder_cpu(s)
    if cpu is None or cpu < CPU_BOUND_PCT:
        return None
    return _hint(s.index, "input-bound", "warning",
                 f"GPU {s.index} waits for input: utilization <= {LOW_UTIL_PCT:g}% in "
                 f"{100 * low:.0f}% of the last {s.span_s:.0f} s while its process runs at "
                 f"{cpu:.0f}% CPU")


def _feeder_cpu(s: Series) -> float | None:
    """Median over the window of the busiest process's CPU% on this device."""
    per_sample = [c for c in s.column("top_process_cpu_pct") if c is not None]
    return _median(per_sample) if per_sample else None


def underfilled(s: Series) -> Hint | None:
    if not s.enough():
        return None
    util = _mean(s.utils())
    if util is None or util < UNDERFILLED_BUSY_PCT:
        return None
    sm = _mean([sm for measured, sm in zip(s.column("measured"), s.column("sm_active_pct"),
                                           strict=True) if measured and sm is not None])
    if sm is None or sm >= UNDERFILLED_SM_PCT:
        return None
    return _hint(s.index, "underfilled", "warning",
                 f"GPU {s.index} is busy {util:.0f}% of the time but only {sm:.0f}% of its SMs "
                 f"are active: kernels too small to fill it")


def memory_bound(s: Series) -> Hint | None:
    if not s.enough():
        return None
    busy = [bool(measured) and (util or 0) >= BUSY_UTIL_PCT
            for measured, util in zip(s.column("measured"), s.column("utilization_gpu_pct"),
                                      strict=True)]
    if sum(busy) < MIN_SAMPLES // 2:
        return None
    dram = _mean([v for v in compress(s.column("dram_bw_pct"), busy) if v is not None])
    tensor = _mean([v for v in compress(s.column("tensor_active_pct"), busy) if v is not None])
    if dram is None or tensor is None:
        return None
    if dram < MEMBOUND_DRAM_PCT or tensor >= MEMBOUND_TENSOR_PCT:
        return None
    return _hint(s.index, "memory-bound", "info",
                 f"GPU {s.index} is limited by memory bandwidth: DRAM {dram:.0f}% of peak, "
                 f"tensor cores {tensor:.0f}% active")


def power_capped(s: Series) -> Hint | None:
    if not s.enough():
        return None
    share = s.share_holding(POWER_REASONS)
    if share < CAPPED_SHARE:
        return None
    dev = s.latest
    clocks = [clock for held, clock in zip(s.holding(POWER_REASONS), s.column("clock_sm_ratio"),
                                           strict=True) if held and clock is not None]
    clock_txt = f", SM clock {100 * _median(clocks):.0f}% of max" if clocks else ""
    limit, default = dev.power_limit_w, dev.power_limit_default_w
    lowered = limit is not None and default is not None and limit < 0.98 * default
    if lowered:
        what = f"power limit {limit:.0f} W (default {default:.0f} W)"
    elif limit is not None:
        what = f"its power limit {limit:.0f} W"
    else:
        what = "its power limit"
    return _hint(s.index, "power-capped", "warning" if lowered else "info",
                 f"GPU {s.index} is held at {what} in {100 * share:.0f}% of the last "
                 f"{s.span_s:.0f} s{clock_txt}")


def thermal_throttled(s: Series) -> Hint | None:
    if not s.enough():
        return None
    share = s.share_holding(THERMAL_REASONS)
    if share < THERMAL_SHARE:
        return None
    hw = any(s.holding(HW_THERMAL_REASONS))
    temp = s.latest.temperature_c
    temp_txt = f" at {temp:.0f} °C" if temp is not None else ""
    return _hint(s.index, "thermal-throttled", "critical" if hw else "warning",
                 f"GPU {s.index} slows its clocks for heat{temp_txt} in {100 * share:.0f}% of "
                 f"the last {s.span_s:.0f} s")


def memory_nearly_full(dev: Device) -> Hint | None:
    pct = dev.memory_pct
    if pct is None or pct < MEMORY_FULL_PCT or dev.mig_instances:
        return None  # under MIG memory belongs to the instances: see instances_nearly_full
    return _hint(dev.index, "memory-nearly-full", "warning",
                 f"GPU {dev.index} memory {pct:.0f}% full "
                 # a percentage means both readings are there
                 f"({cast(float, dev.memory_used_mib) / MIB_PER_GIB:.1f} of "
                 f"{cast(float, dev.memory_total_mib) / MIB_PER_GIB:.1f} GiB)")


def instances_nearly_full(dev: Device) -> list[Hint]:
    """memory-nearly-full for each MIG instance of ``dev`` (one per GPU instance)."""
    out: dict[int, Hint] = {}
    for inst in dev.mig_instances:
        pct = inst.memory_pct
        if pct is None or pct < MEMORY_FULL_PCT or inst.gpu_instance_id in out:
            continue
        out[inst.gpu_instance_id] = _hint(
            dev.index, "memory-nearly-full", "warning",
            f"{instance_name(dev.index, inst)} memory {pct:.0f}% full "
            f"({cast(float, inst.memory_used_mib) / MIB_PER_GIB:.1f} of "
            f"{cast(float, inst.memory_total_mib) / MIB_PER_GIB:.1f} GiB)",
            inst.gpu_instance_id)
    return list(out.values())


def device_unhealthy(dev: Device) -> Hint | None:
    if dev.status == "ok":
        return None
    why = f": {dev.status_reason}" if dev.status_reason else ""
    return _hint(dev.index, "device-unhealthy", "critical", f"GPU {dev.index} is {dev.status}{why}")


def device_health(dev: Device, last_xid: ExplainedXid | None = None) -> list[Hint]:
    """One hint per health problem the device reports: uncorrectable ECC errors, a failed or
    pending row remap, pages waiting to be retired, a PCIe link below its maximum width (or
    generation while busy: an idle link slows down to save power), the last Xid error
    (explained by ``last_xid``, the device's last explained Xid event, where there is one)."""
    xid = xid_hint(dev, last_xid)
    if dev.status != "ok":  # device_unhealthy says it; the Xid that brought it down says why
        return [xid] if xid is not None else []
    i = dev.index
    out = []
    if dev.ecc_errors_uncorrected_volatile:
        n = dev.ecc_errors_uncorrected_volatile
        out.append(_hint(i, "ecc-uncorrected", "critical",
                         f"GPU {i} has {n} uncorrectable ECC error{'s' if n != 1 else ''} since "
                         "the driver loaded" + _counts(
                             ("over its lifetime", dev.ecc_errors_uncorrected_aggregate),
                             ("corrected since the driver loaded",
                              dev.ecc_errors_corrected_volatile))))
    rows = _counts(("rows remapped for uncorrectable errors", dev.remapped_rows_uncorrectable),
                   ("for correctable ones", dev.remapped_rows_correctable))
    if dev.remapped_rows_failed:
        out.append(_hint(i, "row-remap-failed", "critical",
                         f"GPU {i} failed to remap a memory row with errors" + rows))
    elif dev.remapped_rows_pending:
        out.append(_hint(i, "row-remap-pending", "warning",
                         f"GPU {i} has a memory row remap waiting for the next GPU reset" + rows))
    if dev.retired_pages_pending:
        out.append(_hint(i, "pages-pending", "warning",
                         f"GPU {i} has retired memory pages waiting for the next reboot" + _counts(
                             ("retired for double-bit errors", dev.retired_pages_dbe),
                             ("for single-bit ones", dev.retired_pages_sbe))))
    narrow = (dev.pcie_width is not None and dev.pcie_width_max is not None
              and dev.pcie_width < dev.pcie_width_max)
    slow = (dev.pcie_gen is not None and dev.pcie_gen_max is not None
            and dev.pcie_gen < dev.pcie_gen_max
            and (dev.utilization_gpu_pct or 0.0) >= BUSY_UTIL_PCT)
    if narrow or slow:
        parts = ([f"x{dev.pcie_width} of its x{dev.pcie_width_max}"] if narrow else []) + (
            [f"Gen {dev.pcie_gen} of its Gen {dev.pcie_gen_max} while busy"] if slow else [])
        out.append(_hint(i, "pcie-degraded", "warning",
                         f"GPU {i}'s PCIe link runs {' and '.join(parts)}"))
    if xid is not None:
        out.append(xid)
    return out


def xid_hint(dev: Device, xid: ExplainedXid | None) -> Hint | None:
    """The device's last Xid, named and explained by NVIDIA's catalog: ``GPU 2 Xid 79 (GPU has
    fallen off the bus): job 1234 (alice) — drain the node and reboot it``. Its severity is the
    catalog action's. Without an explained event (the Xid came before gputop watched, or from a
    source without events) the code alone is decoded."""
    if xid is not None and (dev.xid_last is None or xid.info.code == dev.xid_last):
        info, who = xid.info, xid.summary()
    elif dev.xid_last:
        info = catalog().describe(dev.xid_last)
        who = (f"GPU {dev.index} Xid {info.code} ({info.name}): the last since gputop started,"
               " not seen as it came")
    else:
        return None
    return Hint(device=dev.index, code="xid", severity=info.severity,
                message=f"{who} — {info.action}", advice=info.meaning)


def _counts(*figures: tuple[str, int | None]) -> str:
    """Return `` (12 over its lifetime, 3 corrected …)``: the figures a device reports, for the
    detail of a health hint; nothing where it reports none of them."""
    known = [f"{n} {what}" for what, n in figures if n is not None]
    return f" ({', '.join(known)})" if known else ""


def _held_mib(dev: Device) -> float:
    held = sum(p.gpu_memory_mib or 0.0 for p in dev.processes)
    if not dev.processes and dev.memory_used_mib:
        held = dev.memory_used_mib  # processes not visible (container): fall back to used memory
    return held


def activity_pct(dev: Device) -> float | None:
    """Return the whole GPU's SM activity: GPM's SM active where measured, else utilization
    (the time a kernel ran, which a kernel on one SM fills): what idle is judged by."""
    sm = dev.saturation.sm_active_pct
    return sm if sm is not None else dev.utilization_gpu_pct


def idle_state(activity: float | None, processes: Iterable[Process]) -> bool | None:
    """Return whether a GPU (or MIG instance) with ``activity`` and ``processes`` is idle:
    True, False, or None where there is no activity reading (not idle, and not busy). The hint
    and the idle ledger (gputop.analysis.waste) judge by this one rule."""
    counted = activity is not None and activity <= IDLE_UTIL_PCT  # only then do processes count
    return idle_reading(activity, top_sm_pct(processes) if counted else None)


def idle_reading(activity: float | None, top_process_sm_pct: float | None) -> bool | None:
    """Return `idle_state` from the busiest process's SM% (None: none reported): what the
    history's window keeps of the processes."""
    if activity is None:
        return None
    if activity > IDLE_UTIL_PCT:
        return False
    return top_process_sm_pct is None or top_process_sm_pct <= IDLE_UTIL_PCT


def _idle(dev: Device) -> bool:
    return idle_state(activity_pct(dev), dev.processes) is True


def idle_allocated(s: Series, runs: IdleRuns) -> Hint | None:
    dev = s.latest
    if s.span_s < IDLE_MIN_OBSERVED_S or not s.all_idle():
        return None
    held = _held_mib(dev)
    if held < IDLE_MIN_MEMORY_MIB:
        return None
    found = _idle_long_enough(runs, (s.index,), s.times[-1], dev.processes)
    if found is None:
        return None
    measured = "SM activity" if dev.saturation.sm_active_pct is not None else "utilization"
    return _hint(s.index, "idle-allocated", "warning",
                 f"{_held_idle(f'GPU {s.index}', dev.processes)}: {held / MIB_PER_GIB:.1f} GiB "
                 f"held{found[0]} with 0% {measured} for {found[1]}")


def _instance_idle(inst: MigInstance) -> bool:
    """Idle by its GPU instance's SM activity (GPM); not measured is not idle."""
    return idle_state(sm_active(inst), inst.processes) is True


def instances_idle_allocated(s: Series, runs: IdleRuns) -> list[Hint]:
    """idle-allocated for each MIG instance of the device that holds memory and did nothing."""
    out: list[Hint] = []
    if s.span_s < IDLE_MIN_OBSERVED_S:
        return out
    with_processes = {i.gpu_instance_id for i in s.latest.mig_instances if i.processes}
    by_memory: set[int] = set()
    for inst in s.latest.mig_instances:
        ids = (inst.gpu_instance_id, inst.compute_instance_id)
        if not s.instance_idle(inst):
            continue
        held = sum(p.gpu_memory_mib or 0.0 for p in inst.processes)
        named = instance_name(s.index, inst)
        if not inst.processes:
            # Processes not visible (a container): the used memory, which is the GPU instance's,
            # shared by its compute instances. Said once per GPU instance, and not where a
            # compute instance beside this one has processes that hold it.
            if inst.gpu_instance_id in with_processes or inst.gpu_instance_id in by_memory:
                continue
            by_memory.add(inst.gpu_instance_id)
            held = inst.memory_used_mib or 0.0
            named = instance_name(s.index, inst, compute=False)
        if held < IDLE_MIN_MEMORY_MIB:
            continue
        found = _idle_long_enough(runs, (s.index, *ids), s.times[-1], inst.processes)
        if found is not None:
            out.append(_hint(s.index, "idle-allocated", "warning",
                             f"{_held_idle(named, inst.processes)}: "
                             f"{held / MIB_PER_GIB:.1f} GiB held"
                             f"{found[0]} with 0% SM activity for {found[1]}",
                             inst.gpu_instance_id))
    return out


def _held_idle(named: str, processes) -> str:
    """``GPU 3 held idle 42 min by job 4242 (alice)``: who holds it most and how long it has
    held it idle in all, from the idle ledger's figures on the processes (gputop.analysis.waste);
    just ``named`` where no ledger ran."""
    holders = [p for p in processes if p.idle_s]
    if not holders:
        return named
    p = max(holders, key=lambda p: (p.gpu_memory_mib or 0.0, p.idle_s))
    job = job_name(p)
    who = f" by {job}" + (f" ({p.user})" if p.user else "") if job else ""
    return f"{named} held idle {_ago(p.idle_s)}{who}"


def _idle_long_enough(runs: IdleRuns, key: tuple[int, ...], now: float,
                      processes) -> tuple[str, str] | None:
    """(who holds it, for how long) where the idle run or the holders' age reaches
    IDLE_MINUTES_S; else None."""
    idle_s = runs.idle_s(key, now)
    starts = [p.started for p in processes if p.started is not None and p.gpu_memory_mib]
    age = now - min(starts) if starts else None
    if idle_s < IDLE_MINUTES_S and (age is None or age < IDLE_MINUTES_S):
        return None
    who = ""
    if processes:
        p = max(processes, key=lambda p: p.gpu_memory_mib or 0.0)
        who = f" by {p.name or 'pid ' + str(p.pid)} (pid {p.pid}"
        who += f", {p.user}" if p.user else ""
        who += f", started {_ago(age)} ago)" if age is not None else ")"
    since = f"at least {_ago(idle_s)}" if idle_s >= IDLE_MINUTES_S else f"the last {_ago(idle_s)}"
    return who, since


class IdleRuns:
    """Since when each GPU, and each MIG instance, has been idle without a break: a fold over
    the samples, oldest first, so an idle run is known however long ago it began while the
    hints' window holds only the last minute. Keys: ``(GPU,)`` and ``(GPU, GI, CI)``."""

    def __init__(self) -> None:
        self._since: dict[tuple[int, ...], float] = {}
        self._time: float | None = None

    def add(self, snap: Snapshot) -> None:
        """Take one sample in: a repeated one is ignored, an older one (a replay seeking back)
        starts over."""
        if self._time is not None and snap.time <= self._time:
            if snap.time == self._time:
                return
            self._since.clear()
        self._time = snap.time
        idle: set[tuple[int, ...]] = set()
        for dev in snap.devices:
            if _idle(dev):
                idle.add((dev.index,))
            for inst in dev.mig_instances:
                if _instance_idle(inst):
                    idle.add((dev.index, inst.gpu_instance_id, inst.compute_instance_id))
        for key in [k for k in self._since if k not in idle]:
            del self._since[key]
        for key in idle:
            self._since.setdefault(key, snap.time)

    def idle_s(self, key: tuple[int, ...], now: float) -> float:
        """How long ``key`` has been idle by ``now`` (0 if it is not)."""
        since = self._since.get(key)
        return now - since if since is not None else 0.0

    @classmethod
    def over(cls, history: Sequence[Snapshot]) -> IdleRuns:
        runs = cls()
        for snap in history:
            runs.add(snap)
        return runs


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# ---------------------------------------------------------------- multi-device: stragglers
ATTRIBUTED = "\0attributed"  # jobs() key of a job named by attribution, never a user name


def job_key(user: str | None, command: str | None) -> tuple[str, str] | None:
    """Processes of one job share a user and a command once rank arguments are stripped."""
    if not command:
        return None
    return (user or "", _RANK_ARG.sub("", " " + command).strip())


def jobs(devices: Sequence[Device]) -> dict[tuple[str, str], list[int]]:
    """GPU indices per job, from the processes running on each GPU: the job they were
    attributed to (Slurm job, pod, container) where known, else user and command."""
    out: dict[tuple[str, str], list[int]] = {}
    for dev in devices:
        for p in dev.processes:
            name = job_name(p)
            key = (ATTRIBUTED, name) if name is not None else job_key(p.user, p.command)
            if key is not None and dev.index not in out.setdefault(key, []):
                out[key].append(dev.index)
    return out


def _busy_clock(s: Series) -> float | None:
    ratios = [clock for clock, util, idle in zip(s.column("clock_sm_ratio"),
                                                 s.column("utilization_gpu_pct"),
                                                 s.holding(IDLE_REASONS), strict=True)
              if clock is not None and (util or 0) >= BUSY_UTIL_PCT and not idle]
    return _median(ratios) if len(ratios) >= MIN_SAMPLES // 2 else None


def stragglers(series: dict[int, Series]) -> list[Hint]:
    # A MIG GPU is no peer: its instances run their own jobs on slices of different sizes.
    latest = [s.latest for s in series.values() if not s.latest.mig_instances]
    out: dict[int, Hint] = {}
    for key, gpus in jobs(latest).items():
        members = [series[g] for g in gpus if g in series and series[g].enough()]
        if len(members) < 2:
            continue
        clocks = {s.index: _busy_clock(s) for s in members}
        busy = {s.index: _mean(s.utils()) for s in members}
        named = key[1] if key[0] == ATTRIBUTED else None
        for s in members:
            peers = [m for m in members if m.index != s.index]
            hint = _straggler(s, peers, clocks, busy)
            if hint is not None and named is not None:
                # "job 4242 on GPUs 0–7: GPU 5 is its straggler: SM clock …"
                detail = hint.message.split(": ", 1)[1]
                hint = replace(hint, message=f"{named} on GPUs {gpu_list(gpus)}: GPU {s.index} "
                                             f"is its straggler: {detail}")
            if hint is not None:
                out.setdefault(s.index, hint)
    return list(out.values())


def slow_clock_why(devices: Sequence[Device]) -> str:
    """Say why a GPU's clock is slow, from its readings: the clock-event reasons it held (an
    idle GPU's aside), else that none was held, or that its driver (AMD's, Intel's) gives no
    clock-event reasons at all, whose silence says nothing."""
    return held_why([d.clock_event_reasons for d in devices])


def held_why(readings: Sequence[Sequence[str] | None]) -> str:
    """Return `slow_clock_why` from each reading's clock-event reasons (None: not reported)."""
    held = sorted({r for reasons in readings for r in (reasons or ()) if r != "gpu_idle"})
    if held:
        return ", ".join(held)
    if any(reasons is not None for reasons in readings):
        return "no reason reported"
    return "its driver reports no clock-event reasons"


def _straggler(s: Series, peers: list[Series], clocks: dict, busy: dict) -> Hint | None:
    n = len(peers) + 1
    detail = straggler_detail(
        clocks[s.index], [clocks[p.index] for p in peers], busy[s.index],
        [busy[p.index] for p in peers], s.why_slow)
    if detail is None:
        return None
    return _hint(s.index, "straggler", "warning",
                 f"GPU {s.index} is the slow one of the {n} GPUs of its job: {detail}")


def straggler_detail(clock: float | None, peer_clocks: Sequence[float | None],
                     busy: float | None, peer_busy: Sequence[float | None],
                     why: Callable[[], str], power: float | None = None,
                     peer_power: Sequence[float | None] = ()) -> str | None:
    """Say how one GPU deviates from its job's others, or None where it does not: its busy SM
    clock (a fraction of its max) ``STRAGGLER_CLOCK_GAP`` below its peers' median (``why``: the
    clock-event reasons it held), else its utilization ``STRAGGLER_BUSY_GAP_PCT`` points above
    theirs while they wait, else its power draw (W) ``STRAGGLER_POWER_GAP`` below theirs while
    both are busy. One judgment for the node's straggler hint and the cluster's job view
    (gputop/cluster/job_view.py); a figure unknown (None) is no deviation, nor a peer's."""
    known_clocks = [c for c in peer_clocks if c is not None]
    if clock is not None and known_clocks:
        ref = _median(known_clocks)
        if clock <= (1 - STRAGGLER_CLOCK_GAP) * ref:
            return (f"SM clock {100 * clock:.0f}% of max while its peers run at {100 * ref:.0f}% "
                    f"({why()}); the others wait for it")
    known_busy = [b for b in peer_busy if b is not None]
    if busy is not None and known_busy:
        ref = _median(known_busy)
        if ref <= STRAGGLER_PEER_MAX_BUSY_PCT and busy - ref >= STRAGGLER_BUSY_GAP_PCT:
            return f"busy {busy:.0f}% while its peers are busy {ref:.0f}% and wait for it"
    known_power = [w for w in peer_power if w is not None]
    if power is not None and known_power:
        ref = _median(known_power)
        if power <= (1 - STRAGGLER_POWER_GAP) * ref:
            return (f"power {power:.0f} W while its peers draw {ref:.0f} W; "
                    "the others wait for it")
    return None


# ---------------------------------------------------------------- everything
def analyze(history: Sequence[Snapshot], runs: IdleRuns | None = None,
            xids: XidLog | None = None) -> list[Hint]:
    """All hints for the newest snapshot, from a bounded recent window of ``history``, read
    into the window's columns as the sampler's history keeps them.
    ``runs``: the idle runs so far, where the caller keeps them over a longer past than
    ``history`` holds; else they are found in ``history``.
    ``xids``: likewise the explained Xid events so far; else those ``history`` holds."""
    if not history:
        return []
    if runs is None:
        runs = IdleRuns.over(history)
    if xids is None:
        xids = XidLog()
        xids.extend(history)
    window = Window(WINDOW_S)
    for snap in recent_window(history):
        window.append(snap)
    return judge(history[-1], window.read(WINDOW_S, WINDOW_MAX_SAMPLES), runs, xids)


def analyze_history(history: History, runs: IdleRuns, xids: XidLog) -> list[Hint]:
    """All hints for the history's newest sample, from its window: the sampler's analyzer
    (gputop.analysis.pipeline), which keeps ``runs`` and ``xids`` over every sample."""
    latest = history.latest
    if latest is None:
        return []
    return judge(latest, history.window(WINDOW_S, WINDOW_MAX_SAMPLES), runs, xids)


def judge(latest: Snapshot, windows: Sequence[DeviceWindow], runs: IdleRuns,
          xids: XidLog) -> list[Hint]:
    """All hints for ``latest``, from each device's ``windows`` (gputop.history.window)."""
    hints: list[Hint] = []
    for dev in latest.devices:
        for check in (device_unhealthy, memory_nearly_full):
            h = check(dev)
            if h is not None:
                hints.append(h)
        if dev.status == "ok":
            hints.extend(instances_nearly_full(dev))
        hints.extend(device_health(dev, xids.latest(dev.index)))
    series = device_series(windows)
    current = {d.index for d in latest.devices if d.status == "ok"}
    for index, s in series.items():
        if index not in current:
            continue
        for series_check in (input_bound, underfilled, memory_bound, power_capped,
                             thermal_throttled):
            h = series_check(s)
            if h is not None:
                hints.append(h)
        h = idle_allocated(s, runs)
        if h is not None:
            hints.append(h)
        hints.extend(instances_idle_allocated(s, runs))
    hints.extend(h for h in stragglers(series) if h.device in current)
    hints.sort(key=lambda h: (h.device if h.device is not None else -1,
                              _SEVERITY_ORDER.get(h.severity, 9), h.code,
                              -1 if h.gpu_instance_id is None else h.gpu_instance_id))
    return hints
