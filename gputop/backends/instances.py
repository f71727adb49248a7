"""MIG: how the readings of a GPU's instances add up to the GPU's own.

Percentages (SM activity, DRAM bandwidth, …) are per cycle of the SMs that measured them, so the
GPU's is their average weighted by each instance's SMs; rates in MiB/s add up. Used where NVML's
GPM reads per GPU instance and by the simulator, so both report a MIG GPU the same way.
"""

from __future__ import annotations

from dataclasses import fields

from gputop.core.model import Saturation

PCT_FIELDS = tuple(f.name for f in fields(Saturation) if f.name.endswith("_pct"))
RATE_FIELDS = tuple(f.name for f in fields(Saturation) if f.name.endswith("_mibps"))


def combine(parts: list[tuple[dict[str, float | None], float]]) -> dict[str, float | None]:
    """(values by Saturation field, SMs) of each GPU instance -> the GPU's values."""
    out: dict[str, float | None] = {}
    for key in PCT_FIELDS:
        num = den = 0.0
        for values, weight in parts:
            v = values.get(key)
            if v is not None:
                num += v * weight
                den += weight
        out[key] = num / den if den else None
    for key in RATE_FIELDS:
        present = [v for values, _ in parts if (v := values.get(key)) is not None]
        out[key] = sum(present) if present else None
    return out
