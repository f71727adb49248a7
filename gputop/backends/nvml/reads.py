"""Which NVML reads a tick makes: each read, the Device attributes it fills, and how often at most.

A read is one NVML query (or a fixed few that only make sense together, like the four ECC
counters). Live readings may be read on every tick; slow-changing facts (limits, modes, PCIe
maxima) no more often than every ``SLOW_REFRESH_S``; identity facts (serial, VBIOS, compute
capability) once. ``due`` is a pure function of what the consumers want and when each read last
ran, so the call budget is testable without a device.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from gputop.core.budget import Wants

SLOW_REFRESH_S = 10.0
LIVE, SLOW, ONCE = 0.0, SLOW_REFRESH_S, math.inf
# A tick that comes a little early (timer jitter) still counts as a period's end.
EARLY_S = 0.05

ECC_COUNTER_ATTRS = ("ecc_errors_corrected_volatile", "ecc_errors_uncorrected_volatile",
                     "ecc_errors_corrected_aggregate", "ecc_errors_uncorrected_aggregate")

# read -> (the Device attributes it fills, the shortest period it is made at)
READS: dict[str, tuple[tuple[str, ...], float]] = {
    "memory": (("memory_used_mib", "memory_reserved_mib", "memory_free_mib"), LIVE),
    "util": (("utilization_gpu_pct", "utilization_memory_pct"), LIVE),
    "encoder": (("utilization_encoder_pct",), LIVE),
    "decoder": (("utilization_decoder_pct",), LIVE),
    "temp": (("temperature_c",), LIVE),
    "memory_temp": (("temperature_memory_c",), LIVE),
    "fan": (("fan_pct",), LIVE),
    "power": (("power_draw_w",), LIVE),
    "energy": (("energy_j",), LIVE),
    "clock_sm": (("clock_sm_mhz",), LIVE),
    "clock_mem": (("clock_mem_mhz",), LIVE),
    "clock_graphics": (("clock_graphics_mhz",), LIVE),
    "clock_video": (("clock_video_mhz",), LIVE),
    "pstate": (("pstate",), LIVE),
    "events": (("clock_event_reasons", "clock_event_mask"), LIVE),
    "pcie_gen": (("pcie_gen",), LIVE),
    "pcie_width": (("pcie_width",), LIVE),
    "limit": (("power_limit_w",), SLOW),
    "ecc": (("ecc_mode", "ecc_mode_pending"), SLOW),
    "ecc_counters": (ECC_COUNTER_ATTRS, SLOW),
    "mig": (("mig_mode", "mig_mode_pending"), SLOW),
    "persistence": (("persistence_mode",), SLOW),
    "compute_mode": (("compute_mode",), SLOW),
    "pcie_max": (("pcie_gen_max", "pcie_width_max"), SLOW),
    # health counters dashboards alert on (dcgm-exporter's defaults); they change rarely
    "pcie_replay": (("pcie_replay_count",), SLOW),
    "remapped_rows": (("remapped_rows_correctable", "remapped_rows_uncorrectable",
                       "remapped_rows_failed"), SLOW),
    "serial": (("serial",), ONCE),
    "vbios": (("vbios_version",), ONCE),
    "minor": (("minor_number",), ONCE),
    "compute_capability": (("compute_capability",), ONCE),
    "clock_graphics_max": (("clock_graphics_max_mhz",), ONCE),
    "supported_events": (("clock_event_supported_mask",), ONCE),
}
# Reads beyond READS, each more than one attribute's worth, wanted like reads but made
# otherwise: the process lists (and per-process SM%), GPM, under MIG each MIG device's memory
# (its processes come with "processes", its GPM with "saturation"), and the Xid events (xid.py).
COMPOUND = ("processes", "saturation", "mig_instances", "xid_last")
# Reads that others depend on: GPM, the process lists and the MIG devices need to know whether
# MIG is on (reading the mode probes the MIG layout: gputop/backends/nvml/mig.py); the ECC
# counters exist only while ECC is on.
NEEDS = {"saturation": ("mig",), "processes": ("mig",), "mig_instances": ("mig",),
         "ecc_counters": ("ecc",)}
# Every attribute a read fills, with its read.
READ_OF = {attr: read for read, (attrs, _) in READS.items() for attr in attrs}


def periods(wants: Wants | None) -> dict[str, float]:
    """Each read some consumer wants, with the period it is due at: the shortest period asked
    for any of its attributes, never shorter than the read's own floor."""
    if wants is None:
        out = {read: floor for read, (_, floor) in READS.items()}
        out.update(dict.fromkeys(COMPOUND, LIVE))
        return out
    out = {}
    for attr, every in wants.items():
        read = READ_OF.get(attr)
        if read is None:
            if attr in COMPOUND:
                out[attr] = min(every, out.get(attr, math.inf))
            continue
        floor = READS[read][1]
        out[read] = max(floor, min(every, out.get(read, math.inf)))
    for read, needed in NEEDS.items():
        if read in out:
            for other in needed:
                out.setdefault(other, READS[other][1])
    return out


def due(period: float, read_at: float | None, now: float) -> bool:
    """Whether a read last made at ``read_at`` (None: never) is due again at ``now``."""
    return read_at is None or now - read_at >= period - EARLY_S


def fresh(periods_: Mapping[str, float], read_at: Mapping[str, float], now: float) -> list[str]:
    """The reads to make now, in READS order."""
    return [r for r in READS if r in periods_ and due(periods_[r], read_at.get(r), now)]
