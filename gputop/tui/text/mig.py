"""MIG instances in the GPU panel, as text: a chip per instance, or a one-phrase summary where a
GPU has a single line. Pure (no Textual): each function returns whole words that fit a width, so
nothing is ever cut mid-word; what does not fit is dropped and counted ("+3")."""

from __future__ import annotations

from collections.abc import Sequence

from gputop.analysis.mig import busiest, fullest, sm_active
from gputop.core.formatting import num
from gputop.core.model import MigInstance

CHIP_GAP = "  "


def chip(inst: MigInstance) -> str:
    """'1g.10gb 98/97': profile, SM activity and memory used in percent ('-': not reported)."""
    return f"{inst.profile or '?'} {num(sm_active(inst), none='-')}/{num(inst.memory_pct, none='-')}"


def chips_text(instances: Sequence[MigInstance], width: int) -> str:
    """'7 MIG SM/mem%  1g.10gb 98/97  1g.10gb 3/12  +4': every instance's chip in order where
    they all fit ``width``; else the busiest and the fullest first, then as many as fit."""
    legend = f"{len(instances)} MIG SM/mem%"
    order = list(instances)
    if len(CHIP_GAP.join([legend, *map(chip, order)])) > width:
        first = {id(i): i for i in (busiest(instances), fullest(instances)) if i is not None}
        order = [*first.values(), *(i for i in instances if id(i) not in first)]
    parts = [chip(i) for i in order]
    for shown in range(len(parts), -1, -1):
        rest = len(parts) - shown
        text = CHIP_GAP.join([legend, *parts[:shown]] + ([f"+{rest}"] if rest else []))
        if len(text) <= width:
            return text
    return ""


def summary_text(instances: Sequence[MigInstance], width: int) -> str:
    """'7 MIG · SM 98% 1g.10gb GI 3 · mem 97% 3g.40gb GI 1': the instance count, the busiest
    and the fullest instance, shortened (GI ids first, then the fullest, then both) to fit."""
    count = f"{len(instances)} MIG"
    top, full = busiest(instances), fullest(instances)
    hot = f"SM {sm_active(top):.0f}% {top.profile or '?'}" if top is not None else None
    mem = f"mem {full.memory_pct:.0f}% {full.profile or '?'}" if full is not None else None
    hot_id = f"{hot} GI {top.gpu_instance_id}" if top is not None else None
    mem_id = f"{mem} GI {full.gpu_instance_id}" if full is not None else None
    candidates = ([count, hot_id, mem_id], [count, hot, mem], [count, hot], [count, mem],
                  [count])
    for words in candidates:
        text = " · ".join(w for w in words if w)
        if len(text) <= width:
            return text
    return ""
