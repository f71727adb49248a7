"""Where a card's GTs (the engine groups, each with its own clock and sleep state) keep their
files, found once when the backend opens.

- xe: ``device/tile<T>/gt<G>/`` with ``freq0/{act,cur,max,rp0}_freq`` (MHz) and
  ``gtidle/{name,idle_residency_ms}``; the name says which GT it is ("gt0-rc" render and
  compute, "gt1-mc" media).
- i915: one set of clocks for the card in ``cardN/gt_{act,cur,max,RP0}_freq_mhz``, and the
  render GT's RC6 residency in ``cardN/gt/gt0/rc6_residency_ms`` (``rc6_enable`` 0: never
  asleep, so its residency says nothing).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from gputop.backends.drm.cards import Card
from gputop.backends.drm.files import Files
from gputop.backends.intel.values import MEDIA_SUFFIX


@dataclass(frozen=True)
class Gt:
    name: str  # "gt0-rc", "gt1-mc" (xe), "gt0" (i915)
    act_mhz: str  # the file of the clock it runs at (0 while asleep)
    rp0_mhz: str  # the file of the highest clock the hardware allows
    soft_max_mhz: str  # the file of the highest clock the driver is set to allow
    idle_ms: str | None  # the file of its cumulative idle (C6, RC6) time in ms; None: no use


def find_gts(files: Files, card: Card) -> tuple[Gt, ...]:
    """The card's GTs, render/compute first."""
    if card.driver == "xe":
        return _xe(files, card)
    return _i915(files, card)


def _xe(files: Files, card: Card) -> tuple[Gt, ...]:
    out = []
    for folder in sorted(glob.glob(os.path.join(glob.escape(card.device), "tile*", "gt*"))):
        freq = os.path.join(folder, "freq0")
        idle = os.path.join(folder, "gtidle")
        name = files.text(os.path.join(idle, "name")) or os.path.basename(folder)
        out.append(Gt(name=name, act_mhz=os.path.join(freq, "act_freq"),
                      rp0_mhz=os.path.join(freq, "rp0_freq"),
                      soft_max_mhz=os.path.join(freq, "max_freq"),
                      idle_ms=os.path.join(idle, "idle_residency_ms")))
    return tuple(out)


def _i915(files: Files, card: Card) -> tuple[Gt, ...]:
    gt0 = os.path.join(card.folder, "gt", "gt0")
    enabled = files.integer(os.path.join(gt0, "rc6_enable"))
    return (Gt(name="gt0", act_mhz=os.path.join(card.folder, "gt_act_freq_mhz"),
               rp0_mhz=os.path.join(card.folder, "gt_RP0_freq_mhz"),
               soft_max_mhz=os.path.join(card.folder, "gt_max_freq_mhz"),
               idle_ms=os.path.join(gt0, "rc6_residency_ms") if enabled else None),)


def is_media(gt: Gt) -> bool:
    return gt.name.endswith(MEDIA_SUFFIX)
