"""What the history keeps of each sample: one table per kind of key, declared once.

A field names what its readers ask for and says how to read it from the model. The dashboard's cards and plot, the saturation
panel, the advisor's passive view, per-job energy and the process detail view read these names
and nothing else; a reading the model does not have is stored as missing, never as 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gputop.core.model import Device, Process


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


def _known(entries: Sequence[Process], attr: str) -> list[float]:
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
