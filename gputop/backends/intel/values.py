"""Pure rules of the Intel backend: which sensor is which, how a GT's idle time becomes a busy
share and the device's utilization, which energy counter gives the power, a card's name.

No file is opened here: each function takes the numbers read, so that each rule is tested on the
captured values alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

INTEL_VENDOR_ID = 0x8086
# hwmon labels xe prints: "pkg" the GPU package, "vram" its memory (Battlemage also prints
# "mctrl", "pcie" and "vram_ch_N", which the model has no place for); i915 prints one unlabelled
# sensor, temp1, the GPU's.
PACKAGE = "pkg"
VRAM = "vram"
UNLABELLED_GPU = "temp1"
# xe's energy counters by label: "card" (the whole board) where the card measures it, "pkg"
# (the GPU package) always; i915 prints one unlabelled counter, energy1.
ENERGY_LABELS = ("card", "pkg", "energy1")
# xe names each GT's idle counter "gt<N>-rc" (render and compute engines) or "gt<N>-mc"
# (media: video decode, encode and enhance).
MEDIA_SUFFIX = "-mc"


@dataclass(frozen=True)
class Temperatures:
    gpu_c: float | None
    memory_c: float | None


def temperatures(by_label: Mapping[str, float | None]) -> Temperatures:
    """The GPU's and its memory's temperatures from ``{label: °C}`` (gputop.backends.drm.hwmon:
    labels lower case, an unlabelled sensor keyed by its stem)."""
    gpu = by_label.get(PACKAGE)
    if gpu is None:
        gpu = by_label.get(UNLABELLED_GPU)
    return Temperatures(gpu_c=gpu, memory_c=by_label.get(VRAM))


def energy_counter(by_label: Mapping[str, int | None]) -> tuple[str, int] | None:
    """The energy counter (label, µJ) that gives the card's power: the board's where it has
    counted, else the package's. A cumulative counter that reads 0 has never counted: the B580
    under kernel 6.16 prints ``card`` 0 beside a counting ``pkg``."""
    for label in ENERGY_LABELS:
        value = by_label.get(label)
        if value:
            return label, value
    return None


def fan_percent(rpm: int | None, max_rpm: int | None) -> float | None:
    """A fan's speed as a percentage of its highest (fan1_input over fan1_max); None where the
    card prints no highest speed (an RPM alone has no place in the model)."""
    if rpm is None or not max_rpm:
        return None
    return round(100.0 * rpm / max_rpm, 1)


def busy_from_idle(idle_rate: float | None) -> float | None:
    """A GT's busy share (%) from the rate its idle residency grew at (ms idle per ms, from
    gputop.backends.drm.rates): the time it was out of its C6 sleep state. None on the first
    reading."""
    if idle_rate is None:
        return None
    return round(100.0 * max(0.0, min(1.0, 1.0 - idle_rate)), 1)


def utilization(busy_by_gt: Mapping[str, float | None]) -> float | None:
    """The device's utilization from each GT's busy share, keyed by the GT's name.

    xe gives each tile two GTs: ``gt0-rc`` holds the render and compute engines, ``gt1-mc`` the
    media engines (on a card of several tiles, each tile has its own). The device's utilization
    is the mean busy share of its render/compute GTs, as NVIDIA's counts the graphics and
    compute engines and not the video ones; the media GT's share is left out. A name without the
    ``-rc``/``-mc`` suffix (i915's ``gt0``, its RC6 residency) counts as render/compute."""
    known = [v for name, v in busy_by_gt.items()
             if not name.endswith(MEDIA_SUFFIX) and v is not None]
    return round(sum(known) / len(known), 1) if known else None


def positive(value: int | None) -> int | None:
    """A limit the driver prints as 0 where it does not know it (i915's power1_rated_max on the
    A380): None, never 0."""
    return value if value else None


def enforced_limit(sustained: int | None, cap: int | None, critical: int | None) -> int | None:
    """The power limit the card holds to (µW): the lowest it prints. ``power1_max`` is the
    sustained limit (PL1) of i915 and xe, ``power1_cap`` the generic hwmon name a kernel may
    print instead (the B580's fan-patched kernel), ``power1_crit`` xe's critical (I1) limit,
    above which the card throttles whatever the sustained one says (the only limit the B580
    prints under kernel 6.16). A limit printed as 0 is unknown."""
    sustained = positive(sustained) or positive(cap)
    limits = [v for v in (sustained, positive(critical)) if v is not None]
    return min(limits) if limits else None


def product_name(pci_id: tuple[int, int] | None) -> str:
    """The card's name from its PCI id ("Intel GPU 8086:56A5"). Neither driver prints a
    marketing name in sysfs, and a table of names gputop made up would go stale: the PCI id is
    what can be looked up."""
    if pci_id is None:
        return "Intel GPU"
    return f"Intel GPU {pci_id[0]:04X}:{pci_id[1]:04X}"
