"""The model's processes of one DRM card, from what each PID holds on it and the host's facts
about that PID (user, command, container, job), attributed as NVIDIA processes are."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gputop.core.model import Process
from gputop.core.units import MIB
from gputop.host.processes import HostProcesses


@dataclass(frozen=True)
class Held:
    """What one process holds on one card: its memory there and its share of the card's
    time (None where the driver prints neither, or on the first reading)."""

    memory_bytes: int | None
    busy_pct: float | None


def processes(host: HostProcesses, bus: str, held: Mapping[int, Held]) -> tuple[Process, ...]:
    """One Process per PID in ``held``, in PID order."""
    facts_by_pid = host.lookup_device(bus, held)
    out = []
    for pid, use in sorted(held.items()):
        out.append(facts_by_pid[pid].process(
            pid, gpu_memory_mib=use.memory_bytes / MIB if use.memory_bytes is not None else None,
            sm_pct=use.busy_pct))
    return tuple(out)
