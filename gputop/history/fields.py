"""What the history keeps of each sample: one table per kind of key, declared once.

A field names what its readers ask for and says how to read it from the model. The dashboard's cards and plot, the saturation
panel, the advisor's passive view, per-job energy and the process detail view read these names
and nothing else; a reading the model does not have is stored as missing, never as 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gputop.core import clock_events
from gputop.core.model import Device, MigInstance, Process


@dataclass(frozen=True, slots=True)
class DeviceField:
    name: str
    read: Callable[[Device], float | None]


def _ok(dev: Device) -> float:
    return 1.0 if dev.status == "ok" else 0.0


def _power_capped(dev: Device) -> float | None:
    reasons = dev.clock_event_reasons
    return None if reasons is None else float("sw_power_cap" in reasons)


DEVICE_FIELDS: tuple[DeviceField, ...] = (
    DeviceField("ok", _ok),  # 1 while the device answers, 0 while it is lost or in error
    DeviceField("utilization_gpu_pct", lambda d: d.utilization_gpu_pct),
    DeviceField("memory_pct", lambda d: d.memory_pct),
    DeviceField("power_pct", lambda d: d.power_pct),
    DeviceField("power_draw_w", lambda d: d.power_draw_w),
    DeviceField("energy_j", lambda d: d.energy_j),  # a counter: a job's energy is its delta
    DeviceField("power_capped", _power_capped),  # 1 while the software power cap holds it back
    DeviceField("clock_sm_pct", lambda d: d.clock_sm_pct),
    DeviceField("process_sm_pct", lambda d: d.process_sm_pct),
    DeviceField("sm_active_pct", lambda d: d.saturation.sm_active_pct),
    DeviceField("sm_occupancy_pct", lambda d: d.saturation.sm_occupancy_pct),
    DeviceField("tensor_active_pct", lambda d: d.saturation.tensor_active_pct),
    DeviceField("dram_bw_pct", lambda d: d.saturation.dram_bw_pct),
)
DEVICE_COLUMNS = {f.name: i for i, f in enumerate(DEVICE_FIELDS)}


# A process is known by (PID as the device reports it, start time): a PID the kernel hands to a
# new process is another process.
ProcessKey = tuple[int, "float | None"]


def process_key(process: Process) -> ProcessKey:
    return (process.pid, process.started)


@dataclass(frozen=True, slots=True)
class ProcessField:
    name: str
    # from the process's entries on each GPU it holds: GPU memory summed, SM% averaged (each
    # GPU's share of its own SMs), CPU% and host memory as the host reports them (the same on
    # each GPU's entry)
    read: Callable[[Sequence[Process]], float | None]


def _sum(values: list[float]) -> float | None:
    return sum(values) if values else None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _first(values: list[float]) -> float | None:
    return values[0] if values else None


def _known(entries: Iterable[Process], attr: str) -> list[float]:
    return [v for v in (getattr(p, attr) for p in entries) if v is not None]


PROCESS_FIELDS: tuple[ProcessField, ...] = (
    ProcessField("gpu_memory_mib", lambda ps: _sum(_known(ps, "gpu_memory_mib"))),
    ProcessField("sm_pct", lambda ps: _mean(_known(ps, "sm_pct"))),
    ProcessField("cpu_pct", lambda ps: _first(_known(ps, "cpu_pct"))),
    ProcessField("host_memory_mib", lambda ps: _first(_known(ps, "host_memory_mib"))),
)
PROCESS_COLUMNS = {f.name: i for i, f in enumerate(PROCESS_FIELDS)}


def combined(entries: Sequence[Process]) -> dict[str, float | None]:
    """One process's readings from its entries on each GPU it holds, by field name."""
    return {f.name: f.read(entries) for f in PROCESS_FIELDS}


# ---------------------------------------------------------------- the hints' window (window.py)
def _top(values: list[float]) -> float | None:
    return max(values) if values else None


def top_sm_pct(processes: Iterable[Process]) -> float | None:
    """The busiest process's SM% (None: none reported): all the hints' idle rule asks of a
    GPU's or a MIG instance's processes (gputop.analysis.hints.idle_reading)."""
    return _top(_known(processes, "sm_pct"))


def _measured(dev: Device) -> float:
    return 1.0 if dev.saturation.source is not None else 0.0


def _clock_sm_ratio(dev: Device) -> float | None:
    """The SM clock over its maximum, as the hints divide it (not ``clock_sm_pct``'s percent:
    their thresholds compare this very quotient)."""
    if not dev.clock_sm_mhz or not dev.clock_sm_max_mhz:
        return None
    return dev.clock_sm_mhz / dev.clock_sm_max_mhz


def _clock_events(dev: Device) -> float | None:
    reasons = dev.clock_event_reasons
    return None if reasons is None else float(clock_events.encode(reasons))


_DEVICE = {f.name: f for f in DEVICE_FIELDS}

# What the hints read of each sample of a device that answered (gputop.analysis.hints): raw
# readings only, the hints' thresholds stay theirs; the columns' own fields where they are the
# same reading. A device's processes are kept as the two figures the hints take of them: the
# busiest one's CPU% and SM%.
WINDOW_FIELDS: tuple[DeviceField, ...] = (
    _DEVICE["utilization_gpu_pct"],
    DeviceField("measured", _measured),  # 1 where saturation was measured (GPM, the simulator)
    _DEVICE["sm_active_pct"],
    _DEVICE["tensor_active_pct"],
    _DEVICE["dram_bw_pct"],
    DeviceField("clock_sm_ratio", _clock_sm_ratio),
    DeviceField("clock_events", _clock_events),  # NVML's bit mask of the reasons (core.clock_events)
    DeviceField("top_process_cpu_pct", lambda d: _top(_known(d.processes, "cpu_pct"))),
    DeviceField("top_process_sm_pct", lambda d: top_sm_pct(d.processes)),
)
WINDOW_COLUMNS = {f.name: i for i, f in enumerate(WINDOW_FIELDS)}


@dataclass(frozen=True, slots=True)
class InstanceField:
    name: str
    read: Callable[[MigInstance], float | None]


# What the hints read of each MIG instance of a device that answered, keyed by its
# (GPU instance, compute instance).
INSTANCE_FIELDS: tuple[InstanceField, ...] = (
    InstanceField("sm_active_pct", lambda i: i.saturation.sm_active_pct),
    InstanceField("top_process_sm_pct", lambda i: top_sm_pct(i.processes)),
)
INSTANCE_COLUMNS = {f.name: i for i, f in enumerate(INSTANCE_FIELDS)}
