"""MIG instances, read off the model: which is busiest, which is fullest, how busy the whole GPU
is. Pure functions; every view (dashboard, hints, saturation panel) names instances the same way.

Under MIG the driver reports no utilization for the parent GPU (``[N/A]``): how busy the GPU is
can only be told from its instances' SM activity (GPM per GPU instance), never made up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from gputop.core.model import Device, MigInstance


def sm_active(inst: MigInstance) -> float | None:
    return inst.saturation.sm_active_pct


def instance_name(dev_index: int, inst: MigInstance, compute: bool = True) -> str:
    """'GPU 2 MIG 3g.40gb (GI 1)': how hints and the saturation panel name an instance; the
    compute instance is named only where a GPU instance holds more than one (and ``compute``:
    not for what is the whole GPU instance's, as its memory)."""
    profile = inst.profile or "instance"
    ci = f", CI {inst.compute_instance_id}" if inst.compute_instance_id and compute else ""
    return f"GPU {dev_index} MIG {profile} (GI {inst.gpu_instance_id}{ci})"


def parent_sm_active(instances: Sequence[MigInstance]) -> float | None:
    """SM activity over the instances' SMs (each weighted by its SM count where every instance
    reports one), or None unless every instance is measured: a part-measured GPU would read
    idler than it is."""
    values = [v for i in instances if (v := sm_active(i)) is not None]
    if not values or len(values) < len(instances):
        return None
    weights = [w for i in instances if (w := i.sm_count)]
    if len(weights) == len(instances):
        return sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)
    return sum(values) / len(values)


def busy_pct(dev: Device) -> float | None:
    """The GPU's utilization, or under MIG its instances' SM activity (the driver's [N/A])."""
    if dev.utilization_gpu_pct is None and dev.mig_instances:
        return parent_sm_active(dev.mig_instances)
    return dev.utilization_gpu_pct


def busiest(instances: Sequence[MigInstance]) -> MigInstance | None:
    measured = [i for i in instances if sm_active(i) is not None]
    return max(measured, key=lambda i: cast(float, sm_active(i))) if measured else None


def fullest(instances: Sequence[MigInstance]) -> MigInstance | None:
    measured = [i for i in instances if i.memory_pct is not None]
    return max(measured, key=lambda i: cast(float, i.memory_pct)) if measured else None


def instance_of(dev: Device, gpu_instance_id: int,
                compute_instance_id: int) -> MigInstance | None:
    for inst in dev.mig_instances:
        if (inst.gpu_instance_id, inst.compute_instance_id) == (gpu_instance_id,
                                                                compute_instance_id):
            return inst
    return None
