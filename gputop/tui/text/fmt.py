"""Pure text helpers for the dashboard: numbers, durations, bars and sparklines.

No Textual here, so these are cheap to test and to call on every tick.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gputop.core.visible import visible

NA = "N/A"
_EIGHTHS = " ▏▎▍▌▋▊▉"
_SPARK = " ▁▂▃▄▅▆▇█"


_TRACE = "⣀⠤⠒⠉"  # a dot line at one of four heights (braille: two dots side by side per row)
_NARROW = frozenset(" ▏▎▍▌▋▊▉█░▁▂▃▄▅▆▇°…▲▼●▶⏸├└·" + _TRACE)


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


def num(value: float | None, spec: str = ".0f", unit: str = "") -> str:
    return NA if value is None else f"{value:{spec}}{unit}"


def pct(value: float | None) -> str:
    """'  95%' in five cells; '  N/A' (not 'N/A%') where the device reports none."""
    return f"{NA:>5}" if value is None else f"{value:4.0f}%"


def mib(value: float | None) -> str:
    """GPU memory the way nvidia-smi users read it: MiB, switching to GiB past 99999 MiB."""
    if value is None:
        return NA
    if value < 100000:
        return f"{value:.0f}MiB"
    return f"{value / 1024:.1f}GiB"


def host_mem(value: float | None) -> str:
    if value is None:
        return NA
    if value < 1024:
        return f"{value:.0f}MiB"
    return f"{value / 1024:.1f}GiB"


def duration(seconds: float | None) -> str:
    """Running time: `m:ss` under an hour, then `11h09m`, then `2d03h`.

    Past an hour the seconds carry no information and would repaint every row every second.
    """
    if seconds is None or seconds < 0:
        return NA
    s = int(seconds)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}:{s:02d}"


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


def changed_span(old: str, new: str) -> tuple[int, int] | None:
    """The cell range [start, end) where two equally long lines differ, or None if equal.

    Repainting only that range keeps the terminal traffic to the digits that moved.
    """
    if old == new:
        return None
    n = min(len(old), len(new))
    start = 0
    while start < n and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return start, max(end_old, end_new)


def gib_pair(used: int, total: int) -> str:
    """`61.2/503.5G`: used and total bytes of host RAM or swap in GiB, the unit once."""
    return f"{used / 2**30:.1f}/{total / 2**30:.1f}G"


def host_line(facts, width: int) -> str:
    """The host line for ``facts`` (gputop.host.load.HostFacts) in at most ``width`` cells: the
    whole line where it fits, then without separators' padding and labels, then without swap."""
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
