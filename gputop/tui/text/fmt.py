"""Pure text helpers for the dashboard: bars, sparklines, fitting text to cells, the host line.

No Textual here, so these are cheap to test and to call on every tick. Numbers, percentages,
memory and durations are formatted by ``gputop.core.formatting``, which every view shares.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gputop.core.formatting import NA, duration, gib_pair
from gputop.core.visible import visible

_EIGHTHS = " ▏▎▍▌▋▊▉"
# Tuples, not strings: a string indexed at a character past Latin-1 makes a new object each time,
# and the cards keep one per sparkline cell (8 GPUs: 7200 of them, 0.5 MB); these are shared.
_SPARK = tuple(" ▁▂▃▄▅▆▇█")
_TRACE = tuple("⣀⠤⠒⠉")  # a dot line at one of four heights (braille: two dots side by side per row)
_NARROW = frozenset(" ▏▎▍▌▋▊▉█░▁▂▃▄▅▆▇°…▲▼●▶⏸├└·" + "".join(_TRACE))


_DROP_NARROW = {ord(c): None for c in _NARROW}
_RUNS = re.compile(r"([^\x00-\x7f]+)")


def one_cell_each(text: str) -> bool:
    """True when every character of ``text`` takes one terminal cell (no measuring needed)."""
    return text.isascii() or text.translate(_DROP_NARROW).isascii()


def ascii_runs(text: str) -> list[str]:
    """``text`` cut into ASCII and non-ASCII runs: Rich measures ASCII runs at C speed, and the
    non-ASCII ones (an ellipsis, say) stay short instead of slowing down the whole line."""
    if text.isascii():
        return [text]
    return [part for part in _RUNS.split(text) if part]


def level(pct: float | None, mid: float = 50.0, high: float = 85.0) -> str:
    """Which gauge colour a percentage takes: "low", "mid", "high" (or "none")."""
    if pct is None:
        return "none"
    if pct >= high:
        return "high"
    if pct >= mid:
        return "mid"
    return "low"


def bar(pct: float | None, width: int) -> tuple[str, str]:
    """A horizontal bar in eighth-cells: (filled part, empty part), together ``width`` long."""
    if width <= 0:
        return "", ""
    if pct is None:
        return "", " " * width
    cells = max(0.0, min(100.0, pct)) * width / 100.0
    whole = int(cells)
    frac = int((cells - whole) * 8)
    filled = "█" * whole
    if whole < width and frac:
        filled += _EIGHTHS[frac]
    return filled, "░" * (width - len(filled))


def short_name(name: str | None) -> str:
    """A device's name without the vendor prefix every card of a node repeats, made visible
    (a Prometheus target's ``modelName`` label is whatever the target says)."""
    if not name:
        return "unknown device"
    for prefix in ("NVIDIA ", "Tesla "):
        if name.startswith(prefix):
            return visible(name[len(prefix):])
    return visible(name)


def spark_char(v: float | None, top: float = 100.0) -> str:
    """One sparkline cell for a value in [0, top]; None is a gap, any activity shows."""
    if v is None:
        return " "
    share = max(0.0, min(1.0, v / top)) if top > 0 else 0.0
    idx = int(round(share * 8))
    if v > 0 and idx == 0:
        idx = 1
    return _SPARK[idx]


def trace_char(v: float | None, top: float = 100.0) -> str:
    """One cell of a history trace: a line of dots at the value's height, not a filled column,
    so that a steady load reads as a line and not as a second bar beside the gauge."""
    if v is None:
        return " "
    share = max(0.0, min(1.0, v / top)) if top > 0 else 0.0
    return _TRACE[min(len(_TRACE) - 1, int(share * len(_TRACE)))]


def sparkline(values: Iterable[float | None], width: int, top: float = 100.0) -> str:
    """The last ``width`` values as block characters scaled to [0, top]; None draws a gap."""
    if width <= 0:
        return ""
    out = [spark_char(v, top) for v in list(values)[-width:]]
    return " " * (width - len(out)) + "".join(out)


def fit(text: str, width: int) -> str:
    """Pad or cut ``text`` to exactly ``width`` cells (an ellipsis marks a cut)."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text + " " * (width - len(text))
    if width == 1:
        return "…"
    return text[: width - 1] + "…"


def rfit(text: str, width: int) -> str:
    if width <= 0:
        return ""
    if len(text) <= width:
        return " " * (width - len(text)) + text
    return text[: width - 1] + "…" if width > 1 else "…"


PENDING = "…"  # a value not read yet: the host line holds its place until its first reading


def host_line(facts, width: int) -> str:
    """The host line for ``facts`` (gputop.host.load.HostFacts) in at most ``width`` cells: the
    whole line where it fits, then without separators' padding and labels, then without swap.
    ``facts`` None (not read yet): the same labels, each value ``PENDING``."""
    if facts is None:
        cpu = load = ram = swap = up = PENDING
    else:
        cpu = f"{facts.cpu_pct:3.0f}%"
        load = NA if facts.load is None else " ".join(f"{v:.2f}" for v in facts.load)
        ram = gib_pair(facts.mem_used, facts.mem_total)
        swap = gib_pair(facts.swap_used, facts.swap_total) if facts.swap_total else "none"
        up = duration(facts.uptime_s)
    for text in (f"CPU {cpu} · load {load} · RAM {ram} · swap {swap} · up {up}",
                 f"CPU {cpu} load {load} RAM {ram} swap {swap} up {up}",
                 f"CPU {cpu} load {load} RAM {ram} up {up}",
                 f"CPU {cpu} load {load} RAM {ram}"):
        if len(text) <= width:
            return text
    return fit(f"CPU {cpu} load {load} RAM {ram}", width)
