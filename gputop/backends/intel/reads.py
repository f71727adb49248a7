"""What each sample may read of an i915 or xe card, by the Device attributes each read fills.

A read is made only when a consumer wants one of its attributes (gputop.core.budget). Power and
utilization are rates of cumulative counters (energy in µJ, idle time in ms) between two samples,
kept in the backend's `Rates`: None on the first sample, never 0. Static facts (limits, the
highest clock, link maxima, ids) are read once when the backend opens (`static`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gputop.backends.drm import hwmon
from gputop.backends.drm.cards import Card
from gputop.backends.drm.files import Files
from gputop.backends.drm.rates import MS_PER_S, Rates
from gputop.backends.drm.units import celsius, joules, link_width, pcie_generation, watts
from gputop.backends.intel import values
from gputop.backends.intel.gts import Gt, is_media


@dataclass(frozen=True)
class Context:
    """What one sample's reads share: the reader, the counters' last readings, the time."""

    files: Files
    rates: Rates
    now: float  # monotonic seconds


@dataclass(frozen=True)
class Target:
    """One card and its GTs (found once)."""

    card: Card
    gts: tuple[Gt, ...]


def _dev(card: Card, name: str) -> str:
    return os.path.join(card.device, name)


def _busy(ctx: Context, t: Target) -> dict[str, Any]:
    shares = {}
    for gt in t.gts:
        if gt.idle_ms is None:
            continue
        idle = ctx.files.integer(gt.idle_ms)
        rate = ctx.rates.rate((t.card.bus_id, gt.idle_ms), idle, ctx.now * MS_PER_S)
        shares[gt.name] = values.busy_from_idle(rate)
    return {"utilization_gpu_pct": values.utilization(shares)}


def _power(ctx: Context, t: Target) -> dict[str, Any]:
    counter = values.energy_counter(hwmon.labelled(ctx.files, t.card, "energy"))
    if counter is None:
        return {"power_draw_w": None, "energy_j": None}
    label, microjoules = counter
    # µJ per second is µW
    draw = watts(ctx.rates.rate((t.card.bus_id, "energy", label), microjoules, ctx.now))
    return {"power_draw_w": round(draw, 3) if draw is not None else None,
            "energy_j": joules(microjoules)}


def _power_cap(ctx: Context, t: Target) -> dict[str, Any]:
    return {"power_limit_w": watts(values.enforced_limit(
        hwmon.integer(ctx.files, t.card, "power1_max"),
        hwmon.integer(ctx.files, t.card, "power1_cap"),
        hwmon.integer(ctx.files, t.card, "power1_crit")))}


def _temps(ctx: Context, t: Target) -> dict[str, Any]:
    temps = values.temperatures(
        {label: celsius(v) for label, v in hwmon.labelled(ctx.files, t.card, "temp").items()})
    return {"temperature_c": temps.gpu_c, "temperature_memory_c": temps.memory_c}


def _fan(ctx: Context, t: Target) -> dict[str, Any]:
    return {"fan_pct": values.fan_percent(hwmon.integer(ctx.files, t.card, "fan1_input"),
                                          hwmon.integer(ctx.files, t.card, "fan1_max"))}


def _clocks(ctx: Context, t: Target) -> dict[str, Any]:
    """The render GT's clock as the SM clock, the media GT's (xe) as the video clock: the
    frequency each runs at, 0 while it sleeps."""
    out: dict[str, Any] = {"clock_sm_mhz": None, "clock_video_mhz": None}
    for gt in t.gts:
        attr = "clock_video_mhz" if is_media(gt) else "clock_sm_mhz"
        if out[attr] is None:
            out[attr] = ctx.files.integer(gt.act_mhz)
    return out


def _link(ctx: Context, t: Target) -> dict[str, Any]:
    return {"pcie_gen": pcie_generation(ctx.files.text(_dev(t.card, "current_link_speed"))),
            "pcie_width": link_width(ctx.files.integer(_dev(t.card, "current_link_width")))}


@dataclass(frozen=True)
class Read:
    attrs: tuple[str, ...]
    make: Callable[[Context, Target], dict[str, Any]]


READS: dict[str, Read] = {
    "busy": Read(("utilization_gpu_pct",), _busy),
    "power": Read(("power_draw_w", "energy_j"), _power),
    "power_cap": Read(("power_limit_w",), _power_cap),
    "temps": Read(("temperature_c", "temperature_memory_c"), _temps),
    "fan": Read(("fan_pct",), _fan),
    "clocks": Read(("clock_sm_mhz", "clock_video_mhz"), _clocks),
    "link": Read(("pcie_gen", "pcie_width"), _link),
}
READ_OF = {attr: name for name, spec in READS.items() for attr in spec.attrs}


def static(files: Files, t: Target) -> dict[str, Any]:
    """The facts read once, as Device attributes (the name is added by the backend)."""
    render = next((gt for gt in t.gts if not is_media(gt)), None)
    top = None
    if render is not None:
        top = files.integer(render.rp0_mhz)
        if top is None:
            top = files.integer(render.soft_max_mhz)
    card = t.card
    pci, sub = card.pci_id, card.subsystem_id
    return {
        "clock_sm_max_mhz": top,
        # power1_rated_max: i915's default limit (TDP), 0 where the card does not say
        "power_limit_default_w": watts(values.positive(
            hwmon.integer(files, card, "power1_rated_max"))),
        "pcie_gen_max": pcie_generation(files.text(_dev(card, "max_link_speed"))),
        "pcie_width_max": link_width(files.integer(_dev(card, "max_link_width"))),
        # as NVML packs them: device id << 16 | vendor id
        "pci_device_id": pci[1] << 16 | pci[0] if pci is not None else None,
        "pci_sub_device_id": sub[1] << 16 | sub[0] if sub is not None else None,
    }
