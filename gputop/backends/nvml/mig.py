"""A MIG-enabled GPU's MIG devices, as NVML shows them.

The layout (which GPU and compute instances exist, their profiles, UUIDs and SMs) changes only
when an administrator re-partitions the GPU, so it is probed when the MIG mode is read (at open
and on the slow period), not on every tick. Each tick then reads only what moves: each MIG
device's memory and processes.

What the driver documents and real captures show, and this follows:
- a MIG device is a handle from ``nvmlDeviceGetMigDeviceHandleByIndex``; empty slots up to
  ``nvmlDeviceGetMaxMigDeviceCount`` answer NOT_FOUND;
- ``nvmlDeviceGetName`` on it reads "<parent name> MIG <profile>" ("NVIDIA H100 80GB HBM3 MIG
  1g.10gb"), whose last word is the profile as nvidia-smi names it;
- the parent's process list under MIG is the aggregate "only if the caller has appropriate
  privileges"; per-instance lists come from the MIG handles, for any user.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gputop.backends.nvml.procs import ProcessBuffers
from gputop.core.units import MIB


@dataclass(frozen=True)
class MigSlot:
    """One MIG device (a compute instance in a GPU instance) and its handle."""

    handle: Any
    index: int
    gpu_instance_id: int
    compute_instance_id: int
    profile: str | None
    uuid: str | None
    sm_count: int | None
    buffers: ProcessBuffers = field(default_factory=ProcessBuffers, compare=False)

    @property
    def ids(self) -> tuple[int, int, str | None]:
        return self.gpu_instance_id, self.compute_instance_id, self.uuid


def profile_of(name: str | None) -> str | None:
    """The profile in a MIG device's name: "NVIDIA H100 80GB HBM3 MIG 1g.10gb" -> "1g.10gb"."""
    if not name or " MIG " not in name:
        return None
    return name.rsplit(" MIG ", 1)[1].strip() or None


def probe(nv: Any, handle: Any, optional: Callable[..., Any],
          text: Callable[[Any], str | None]) -> tuple[MigSlot, ...]:
    """Every MIG device of the GPU at ``handle``. ``optional`` calls a wrapper and gives None
    where NVML says a value is absent (raising on anything worse, GPU_IS_LOST included);
    ``text`` makes a string of what a binding returns (bytes in old ones)."""
    count = optional(nv.nvmlDeviceGetMaxMigDeviceCount, handle) or 0
    slots = []
    for i in range(count):
        mig = optional(nv.nvmlDeviceGetMigDeviceHandleByIndex, handle, i)
        if mig is None:
            continue  # an empty slot
        gi = optional(nv.nvmlDeviceGetGpuInstanceId, mig)
        ci = optional(nv.nvmlDeviceGetComputeInstanceId, mig)
        if gi is None or ci is None:
            continue  # torn down between the two calls
        attrs = optional(nv.nvmlDeviceGetAttributes, mig)
        slots.append(MigSlot(
            handle=mig, index=i, gpu_instance_id=gi, compute_instance_id=ci,
            profile=profile_of(text(optional(nv.nvmlDeviceGetName, mig))),
            uuid=text(optional(nv.nvmlDeviceGetUUID, mig)),
            # a pynvml struct; older bindings' lack the field
            sm_count=getattr(attrs, "multiprocessorCount", None) if attrs is not None else None,
        ))
    return tuple(slots)


def gpu_instances(slots: tuple[MigSlot, ...]) -> list[tuple[int, float]]:
    """(GPU instance id, its SMs) for GPM: the SMs of its compute instances added up."""
    found: dict[int, float] = {}
    for s in slots:
        found[s.gpu_instance_id] = found.get(s.gpu_instance_id, 0.0) + float(s.sm_count or 1)
    return sorted(found.items())


def memory(mem: Any) -> tuple[float | None, float | None]:
    """(total, used) in MiB of a MIG device's ``nvmlDeviceGetMemoryInfo`` (None: unread)."""
    if mem is None:
        return None, None
    return mem.total / MIB, mem.used / MIB

