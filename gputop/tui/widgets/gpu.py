"""One GPU's widget: a 4-line card (bars and sparkline history) or a compact single line. A card
at least FACTS_CARD_WIDTH wide also names the GPU's Bus-Id beside its name and its persistence,
compute and MIG modes in a column at the right of its bars (gputop/tui/text/facts.py).

Rendering uses the Line API with a per-line cache: each tick the card works out the text of its
lines, and only lines whose text changed are re-rendered and repainted. At 1 s with 8 GPUs most
ticks touch a handful of cells, so the terminal sees little more than the digits that moved.
"""

from __future__ import annotations

import time
from collections import deque
from itertools import islice
from typing import cast

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from gputop.analysis.mig import busy_pct, parent_sm_active, sm_active
from gputop.core.clock_events import LABELS, SLOWDOWNS
from gputop.core.formatting import NA, num, pct
from gputop.core.model import Device, MigInstance
from gputop.core.units import MIB_PER_GIB
from gputop.core.vendors import clock_label
from gputop.core.visible import visible
from gputop.tui.text import fmt
from gputop.tui.text.facts import FACTS_CARD_WIDTH, FACTS_WIDTH, mode_facts
from gputop.tui.text.fmt import short_name
from gputop.tui.text.mig import chips_text, summary_text
from gputop.tui.text.rates import rates_spans
from gputop.tui.widgets.strips import StripCache, line_strip

HISTORY_POINTS = 300
SPARK_BUCKET = 4  # samples per sparkline cell
CARD_HEIGHT = 4
CARD_MIN_WIDTH = 50
NARROW_LINE = 60  # compact lines narrower than this drop the name (two columns in 80 cells)
HALF_LINE_MIN = 38  # the narrowest compact line that still shows bars, power and temperature

# (text, component class or "" for the widget's own style)
Span = tuple[str, str]
Line = tuple[Span, ...]


def clock_text(dev: Device) -> str:
    """' SM 1980/1980MHz' (AMD: ' SCLK …', Intel: ' GT …'), or without the maximum where the
    device reports none (Ascend)."""
    maximum = f"/{num(dev.clock_sm_max_mhz)}" if dev.clock_sm_max_mhz else ""
    return f" {clock_label(dev.vendor)} {num(dev.clock_sm_mhz)}{maximum}MHz"


def util_text(dev: Device) -> str:
    """' 95%', and beside it the SM activity where GPM measures it (' 95% SM act 41%'): busy
    time alone reads 100% while most SMs idle. A MIG GPU's utilization is N/A (the driver
    reports none): its instances' SM activity stands in ('62% · util N/A')."""
    if dev.utilization_gpu_pct is None and dev.mig_instances:
        return f"{num(parent_sm_active(dev.mig_instances), '3.0f')}% · util N/A"
    text = f"{num(dev.utilization_gpu_pct, '3.0f')}%"
    sm = dev.saturation.sm_active_pct if dev.saturation is not None else None
    if sm is not None:
        text += f"  SM act {sm:3.0f}%"
    return text


def memory_text(used: float | None, total: float | None, pct: float | None, width: int) -> str:
    """Return the MEM value in at most ``width`` cells where it can be: nvidia-smi's MiB
    (``62000/81559MiB  76%``), then with the percent unpadded, then in GiB for the GPUs whose
    six-digit MiB would not fit (an H200 or MI300X nearly full: ``164.1/192.0GiB 85%``) rather
    than a figure cut to ``8…``."""
    percent = num(pct, "3.0f")
    for text in (f"{num(used)}/{num(total)}MiB {percent}%",
                 f"{num(used)}/{num(total)}MiB {percent.strip()}%"):
        if len(text) <= width:
            return text
    if used is None or total is None:
        return text
    return f"{used / MIB_PER_GIB:.1f}/{total / MIB_PER_GIB:.1f}GiB {percent.strip()}%"


def power_text(dev: Device) -> str:
    """'660/700W'; '87W' where there is no limit to compare with; 'N/A' where no draw."""
    if dev.power_draw_w is None:
        return NA
    limit = f"/{num(dev.power_limit_w)}" if dev.power_limit_w else ""
    return f"{num(dev.power_draw_w)}{limit}W"


# Badge labels for half-width lines.
SHORT_LABELS = {
    "gpu_idle": "IDLE", "applications_clocks_setting": "APP", "sw_power_cap": "CAP",
    "hw_slowdown": "HW", "sync_boost": "SYNC", "sw_thermal_slowdown": "HOT",
    "hw_thermal_slowdown": "HWHOT", "hw_power_brake_slowdown": "BRAKE",
    "display_clock_setting": "DISP",
}


HINT_CLASSES = {"critical": "gpu--hint-critical", "warning": "gpu--hint-warning"}


def hint_badges(hints: list[tuple[str, str]]) -> list[Span]:
    return [(f"[{code}]", HINT_CLASSES.get(severity, "gpu--badge")) for code, severity in hints]


# The clock-event reasons a hint already names: one badge per cause (#27: `[power-capped]
# [power cap]`, `[idle-allocated] [idle]` said one thing twice).
COVERED_BY_HINT = {
    "power-capped": frozenset({"sw_power_cap"}),
    "thermal-throttled": frozenset({"sw_thermal_slowdown", "hw_thermal_slowdown"}),
    "idle-allocated": frozenset({"gpu_idle"}),
}


def all_badges(hints: list[tuple[str, str]], dev: Device, short: bool = False) -> list[Span]:
    """The hints' badges, then the clock-event reasons no hint names."""
    covered = frozenset().union(*(COVERED_BY_HINT.get(code, ()) for code, _ in hints))
    return hint_badges(hints) + badges(dev, short, skip=covered)


def whole(spans: list[Span], room: int) -> list[Span]:
    """The first of ``spans`` that fit in ``room`` cells together: a badge is shown whole or
    not at all, never cut mid-word."""
    out: list[Span] = []
    used = 0
    for text, cls in spans:
        if used + len(text) > room:
            break
        out.append((text, cls))
        used += len(text)
    return out


def badges(dev: Device, short: bool = False, skip: frozenset[str] = frozenset()) -> list[Span]:
    out: list[Span] = []
    busy = busy_pct(dev)
    for reason in dev.clock_event_reasons or ():
        if reason in skip:
            continue
        if reason == "gpu_idle" and (busy or 0) > 0:
            continue  # NVML sets it between kernels of a busy GPU: noise, not news
        label = (SHORT_LABELS if short else LABELS).get(reason, reason)
        cls = "gpu--slowdown" if reason in SLOWDOWNS else "gpu--badge"
        out.append((f"[{label}]", cls))
    return out


MEMORY_FILLING_PCT = 85.0
MEMORY_NEARLY_FULL_PCT = 95.0  # as the memory-nearly-full hint


def gauge_class(pct: float | None, memory: bool = False) -> str:
    """A bar's colour, by what it means (see colour_rules.py): a busy GPU or one drawing near
    its power limit is healthy and stays calm; only memory nearly full is danger."""
    if pct is None:
        return "gpu--muted"
    if not memory:
        return "gpu--low"
    level = fmt.level(pct, mid=MEMORY_FILLING_PCT, high=MEMORY_NEARLY_FULL_PCT)
    return {"low": "gpu--low", "mid": "gpu--mid"}.get(level, "gpu--high")


def _bar_spans(pct: float | None, width: int, memory: bool = False) -> list[Span]:
    filled, empty = fmt.bar(pct, width)
    return [(filled, gauge_class(pct, memory)), (empty, "gpu--empty")]


def _join(spans: list[Span], width: int) -> Line:
    """Cut or pad a list of spans to exactly ``width`` cells, each made visible (a device name
    or a reason a remote node sent may hold anything)."""
    out: list[Span] = []
    used = 0
    for text, cls in spans:
        if used >= width:
            break
        text = visible(text)
        if used + len(text) > width:
            text = text[: width - used]
        out.append((text, cls))
        used += len(text)
    if used < width:
        out.append((" " * (width - used), ""))
    return tuple(out)


class GpuCard:
    """One GPU's readings, history and text lines (no widget: `GpuPanel` draws the cards)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.device: Device | None = None
        # Sparklines: one cell per SPARK_BUCKET samples (their maximum, so a short spike shows),
        # drawn once per finished bucket; only the last cell moves between buckets. The cells
        # are text, not data: the values live in the sampler's history (gputop.history), which
        # the plot reads.
        self._spark: dict[str, deque[str]] = {
            k: deque(maxlen=HISTORY_POINTS) for k in ("util", "memory", "power")}
        self._bucket: dict[str, list[float | None]] = {k: [] for k in self._spark}
        self.stale_after_s = 3.0
        self.last_ok: float | None = None
        self.compact = False
        self.rates = False  # a fifth line with video-engine and link rates (rates.py)
        self.selected = False
        self.hints: list[tuple[str, str]] = []  # (code, severity) of this GPU's active hints
        # (code, severity) per MIG GPU instance id: the badges of each instance's line
        self.instance_hints: dict[int, list[tuple[str, str]]] = {}
        self.mig_style = "lines"
        self.width = 0
        self.lines: list[Line] = []

    def update(self, device: Device, when: float | None = None) -> None:
        """Take a new reading of this GPU (a sparkline cell) and repaint what changed."""
        self.device = device
        ok = device.status == "ok"
        now = when if when is not None else time.time()
        if ok:
            self.last_ok = now
        for key, value in (("util", device.utilization_gpu_pct),
                           ("memory", device.memory_pct),
                           ("power", device.power_pct)):
            value = value if ok else None
            bucket = self._bucket[key]
            bucket.append(value)
            if len(bucket) >= SPARK_BUCKET:
                self._spark[key].append(fmt.trace_char(_peak(bucket)))
                bucket.clear()

    def spark(self, key: str, width: int) -> str:
        """The last ``width`` points of one history ("util", "memory", "power")."""
        chars = self._spark[key]
        bucket = self._bucket[key]
        last = fmt.trace_char(_peak(bucket)) if bucket else ""
        width -= len(last)
        n = len(chars)
        if n >= width:
            return "".join(islice(chars, n - width, n)) + last
        return " " * (width - n) + "".join(chars) + last

    def relines(self, width: int) -> list[int]:
        """Recompose the lines at ``width``; return the lines that changed."""
        new = self.compose_lines(width)
        old = self.lines
        self.lines = new
        if width != self.width or len(old) != len(new):
            self.width = width
            return list(range(len(new)))
        return [y for y, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]

    def compose_lines(self, width: int) -> list[Line]:
        own = [self._compact_line(width)] if self.compact else self._card_lines(width)
        return own + self._mig_lines(width)

    def instance_count(self) -> int:
        dev = self.device
        return len(dev.mig_instances) if dev is not None and dev.status == "ok" else 0

    def height(self) -> int:
        """Lines this GPU takes: its card or line, and its MIG instances' lines or chips."""
        return self.own_height() + mig_lines(self.instance_count(), self.mig_style)

    def own_height(self) -> int:
        """Lines of the card (or line) itself, without its MIG instances."""
        return 1 if self.compact else CARD_HEIGHT + int(self.rates)

    # ------------------------------------------------------------------ MIG instances
    def _mig_lines(self, width: int) -> list[Line]:
        count = self.instance_count()
        if not count or self.mig_style == "inline":
            return []
        instances = cast(Device, self.device).mig_instances  # a count means a device
        if self.mig_style == "chips":
            return [_join([("  ", ""), (chips_text(instances, width - 2), "gpu--muted")], width)]
        return [self._instance_line(inst, width, n == count - 1)
                for n, inst in enumerate(instances)]

    def _instance_line(self, inst: MigInstance, width: int, last: bool) -> Line:
        """'  ├ 3g.40gb     GI 1 CI 0  M▕███ ▏ 20000/40192MiB  50%  SM▕██ ▏  85%  2 procs':
        whole parts only; bars shrink, then the process count and badges go, never a word cut."""
        head: list[Span] = [("  └ " if last else "  ├ ", "gpu--muted"),
                            (fmt.fit(inst.profile or "?", 11), "gpu--title"),
                            (fmt.fit(f"GI {inst.gpu_instance_id} CI {inst.compute_instance_id}",
                                     11), "gpu--muted")]
        mem = fmt.rfit(f"{num(inst.memory_used_mib)}/{num(inst.memory_total_mib)}MiB "
                       f"{num(inst.memory_pct, '3.0f')}%", 19)
        sm = f"{num(sm_active(inst), '3.0f')}%"
        n = len(inst.processes)
        procs = [(f"  {n} proc{'' if n == 1 else 's'}", "gpu--muted")] if n else []
        tail = procs + [(" " + t, c) for t, c in
                        hint_badges(self.instance_hints.get(inst.gpu_instance_id, []))]
        fixed = sum(len(t) for t, _ in head) + len(" M") + 1 + len(mem) + len("  SM") + 1 + len(sm)
        while tail and fixed + sum(len(t) for t, _ in tail) > width:
            tail.pop()
        rest = width - fixed - sum(len(t) for t, _ in tail)
        bw = min(16, rest // 2) if rest >= 6 else 0
        spans = head + [(" M", "gpu--label")]
        if bw:
            spans += _bar_spans(inst.memory_pct, bw, memory=True)
        spans.append((" " + mem, "gpu--value"))
        spans.append(("  SM", "gpu--label"))
        if bw:
            spans += _bar_spans(sm_active(inst), bw)
        spans.append((" " + sm, "gpu--value"))
        return _join(spans + tail, width)

    def _stale_span(self, dev: Device, short: bool = False) -> list[Span]:
        if dev.data_age_s is not None and dev.data_age_s > self.stale_after_s:
            text = f"{dev.data_age_s:.0f}s old" if short else f" stale {dev.data_age_s:.0f}s"
            return [(text, "gpu--stale")]
        return []

    def _title(self, dev: Device | None) -> str:
        name = short_name(dev.name if dev else None)
        return f"{self.index:>2} {name}"

    def _card_lines(self, width: int) -> list[Line]:
        dev = self.device
        if dev is None:
            return [_join([(self._title(None), "gpu--title")], width),
                    _join([("   waiting for the first sample…", "gpu--muted")], width),
                    *[_join([], width)] * (self.own_height() - 2)]
        if dev.status != "ok":
            return self._lost_lines(dev, width)
        info: list[Span] = [(f" {num(dev.temperature_c)}°C", "gpu--value")]
        fan = [(f" fan {num(dev.fan_pct, '.0f', '%')}", "gpu--muted")]
        pstate = [(f" {dev.pstate}", "gpu--muted")] if dev.pstate else []
        clock = [(clock_text(dev), "gpu--muted")] if dev.clock_sm_mhz is not None else []
        tail = all_badges(self.hints, dev) + self._stale_span(dev)
        tail = [(" " + t, c) for t, c in tail]
        title = self._title(dev)
        # whole badges only, after the title's first few cells and the temperature
        tail = whole(tail, width - min(len(title), 12) - sum(len(t) for t, _ in info))
        # Drop the least useful facts first when the card is narrow.
        for extra in (fan + pstate + clock, pstate + clock, clock, []):
            right = info + extra + tail
            if len(title) + sum(len(t) for t, _ in right) <= width:
                break
        right_len = sum(len(t) for t, _ in right)
        # the Bus-Id beside a whole name, where the card is wide and the badges leave room
        bus = f"  {dev.pci_bus_id}" if dev.pci_bus_id and width >= FACTS_CARD_WIDTH else ""
        if bus and len(title) + len(bus) + right_len <= width:
            left: list[Span] = [(title, "gpu--title"), (bus, "gpu--muted"),
                                (" " * (width - len(title) - len(bus) - right_len), "")]
        else:
            left = [(fmt.fit(title, max(4, width - right_len)), "gpu--title")]
        head = _join(left + right, width)
        lines = [head] + self._gauge_lines(dev, width)
        if self.rates:
            lines.append(_join(rates_spans(dev), width))
        return lines

    def _gauge_lines(self, dev: Device, width: int) -> list[Line]:
        """UTIL, MEM and PWR: label, bar, value and sparkline; on a card FACTS_CARD_WIDTH wide,
        the GPU's modes in a column at their right, one a line."""
        modes = mode_facts(dev) if width >= FACTS_CARD_WIDTH else None
        if not modes:
            modes = None  # an AMD or Intel GPU has none of these modes: no column at all
        column: list[list[Span]] = []
        if modes is not None:
            column = [[(" " + label + " ", "gpu--label"), (value, "gpu--value")]
                      for label, value in modes]
            width -= 1 + FACTS_WIDTH
        value_w = 21
        label_w = 5
        rest = width - label_w - value_w - 1
        if rest >= 24:
            bar_w = max(8, rest // 2)
            spark_w = rest - bar_w
        else:
            bar_w, spark_w = max(3, rest), 0
        mem = memory_text(dev.memory_used_mib, dev.memory_total_mib, dev.memory_pct, value_w - 1)
        power = power_text(dev)
        mig = dev.utilization_gpu_pct is None and bool(dev.mig_instances)
        rows = (
            ("SM" if mig else "UTIL", busy_pct(dev), util_text(dev), "util", "gpu--spark-util"),
            ("MEM", dev.memory_pct, mem, "memory", "gpu--spark-memory"),
            ("PWR", dev.power_pct, power, "power", "gpu--spark-power"),
        )
        lines = []
        for label, share, value, hist, spark_cls in rows:
            spans: list[Span] = [(f"{label:<{label_w - 1}} ", "gpu--label")]
            spans += _bar_spans(share, bar_w, memory=label == "MEM")
            spans.append((" " + fmt.fit(value, value_w - 1), "gpu--value"))
            if spark_w > 0:
                spans.append((" " + self.spark(hist, spark_w), spark_cls))
            line = _join(spans, width)
            if modes is not None:
                fact = column.pop(0) if column else []
                line = _join([*line, *fact], width + 1 + FACTS_WIDTH)
            lines.append(line)
        return lines

    def _lost_lines(self, dev: Device, width: int) -> list[Line]:
        reason = dev.status_reason or "no readings"
        seen = (time.strftime("%H:%M:%S", time.localtime(self.last_ok))
                if self.last_ok is not None else "never")
        return [
            _join([(self._title(dev), "gpu--title"), (" ", ""), (f" {dev.status.upper()} ",
                                                                  "gpu--lost")], width),
            _join([(f"   {dev.status.upper()}: {reason}", "gpu--lost")], width),
            _join([(f"   last good reading at {seen}", "gpu--muted")], width),
            *[_join([], width)] * (self.own_height() - 3),
        ]

    def _compact_line(self, width: int) -> Line:
        if width < NARROW_LINE:
            return self._narrow_line(width)
        dev = self.device
        wide = width >= 110
        name_w = 20 if wide else 12
        head: list[Span] = [(f"{self.index:>2} ", "gpu--title"),
                            (fmt.fit(short_name(dev.name if dev else None), name_w), "gpu--title")]
        if dev is None:
            return _join(head + [(" waiting…", "gpu--muted")], width)
        if dev.status != "ok":
            return _join(head + [(" ", ""), (f" {dev.status.upper()} ", "gpu--lost"),
                                 (f" {dev.status_reason or ''}", "gpu--muted")], width)
        bw = 10 if wide else 6
        # A MIG GPU's line names its instances instead of a history; where the line is short
        # the parent's utilization bar ([N/A] under MIG) and power bar make room for them.
        summary = self.instance_count() > 0 and self.mig_style == "inline"
        spans = list(head)
        if wide or not summary:
            spans += [(" U", "gpu--label")] + _bar_spans(dev.utilization_gpu_pct, bw)
            spans.append((pct(dev.utilization_gpu_pct), "gpu--value"))
        spans += [(" M", "gpu--label")] + _bar_spans(dev.memory_pct, bw, memory=True)
        if wide:
            spans.append((fmt.rfit(f"{num(dev.memory_used_mib)}MiB", 9), "gpu--value"))
        spans.append((pct(dev.memory_pct), "gpu--value"))
        if wide or not summary:
            spans += [(" P", "gpu--label")] + _bar_spans(dev.power_pct, bw)
        spans.append((fmt.rfit(f"{num(dev.power_draw_w)}W", 5), "gpu--value"))
        spans.append((fmt.rfit(f"{num(dev.temperature_c)}°C", 6), "gpu--value"))
        if wide:
            spans.append((fmt.rfit(f"{num(dev.clock_sm_mhz)}MHz", 8), "gpu--muted"))
        tail = [(" " + t, c) for t, c in all_badges(self.hints, dev) + self._stale_span(dev)]
        tail = whole(tail, width - sum(len(t) for t, _ in spans))
        used = sum(len(t) for t, _ in spans + tail)
        if summary:
            text = summary_text(dev.mig_instances, width - used - 1)
            if text:
                tail.append((" " + text, "gpu--value"))
            return _join(spans + tail, width)
        spark_w = width - used - 1
        if spark_w >= 6:
            spans.append((" " + self.spark("util", spark_w), "gpu--spark-util"))
        return _join(spans + tail, width)

    def _narrow_line(self, width: int) -> Line:
        """Half of an 80-column terminal: no name, short bars, short badges."""
        dev = self.device
        head: list[Span] = [(f"{self.index:>2}", "gpu--title")]
        if dev is None:
            return _join(head + [(" waiting…", "gpu--muted")], width)
        if dev.status != "ok":
            return _join(head + [(" ", ""), (f" {dev.status.upper()} ", "gpu--lost")], width)
        spans = list(head)
        spans += [(" U", "gpu--label")] + _bar_spans(dev.utilization_gpu_pct, 4)
        spans.append((pct(dev.utilization_gpu_pct), "gpu--value"))
        spans += [(" M", "gpu--label")] + _bar_spans(dev.memory_pct, 4, memory=True)
        spans.append((pct(dev.memory_pct), "gpu--value"))
        spans.append((fmt.rfit(f"{num(dev.power_draw_w)}W", 5), "gpu--value"))
        spans.append((fmt.rfit(f"{num(dev.temperature_c)}°C", 5), "gpu--value"))
        if self.instance_count() and self.mig_style == "inline":
            spans.append((f" {self.instance_count()}MIG", "gpu--value"))
        tail = [(" " + t, c) for t, c in badges(dev, short=True)
                + self._stale_span(dev, short=True)]
        return _join(spans + whole(tail, width - sum(len(t) for t, _ in spans)), width)

    def line_texts(self) -> list[str]:
        """The card's lines as plain text (tests, screenshots in text form)."""
        return ["".join(t for t, _ in line) for line in self.lines]


def mig_lines(count: int, style: str) -> int:
    """Lines a GPU's ``count`` MIG instances take under its card or line in ``style``: "lines"
    (one each), "chips" (one line of chips) or "inline" (only a summary on the GPU's own line;
    see dashboard.choose_layout)."""
    if not count or style == "inline":
        return 0
    return count if style == "lines" else 1


def _peak(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


class GpuPanel(StripCache, ScrollView):
    """All GPUs in one widget: a grid of 4-line cards or one line per GPU, each followed by its
    MIG instances' lines (a row of cards is as tall as its tallest card).

    One widget rather than one per GPU: Textual's fixed cost per widget repaint (styles,
    messages, compositing) would otherwise be paid eight or sixteen times a second. Each tick only
    the changed cells of changed lines are repainted. Fed with ``update(devices, when)``.
    """

    class Selected(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    COMPONENT_CLASSES = {
        "gpu--title", "gpu--label", "gpu--low", "gpu--mid", "gpu--high", "gpu--empty",
        "gpu--muted", "gpu--slowdown", "gpu--badge", "gpu--lost", "gpu--stale", "gpu--spark-util",
        "gpu--spark-memory", "gpu--spark-power", "gpu--value", "gpu--selected",
        "gpu--selected-title", "gpu--hint-critical", "gpu--hint-warning",
    }

    DEFAULT_CSS = """
    GpuPanel { height: auto; background: $background; scrollbar-size-vertical: 1; }
    GpuPanel > .gpu--selected { background: $selected; }
    GpuPanel > .gpu--title { text-style: bold; color: $primary; }
    GpuPanel > .gpu--selected-title { text-style: bold reverse; }
    GpuPanel > .gpu--label { color: $muted; }
    GpuPanel > .gpu--value { color: $foreground; }
    GpuPanel > .gpu--low { color: $gauge-low; }
    GpuPanel > .gpu--mid { color: $gauge-mid; }
    GpuPanel > .gpu--high { color: $gauge-high; }
    GpuPanel > .gpu--empty { color: $gauge-empty; }
    GpuPanel > .gpu--muted { color: $muted; }
    GpuPanel > .gpu--slowdown { color: $badge-slowdown; text-style: bold; }
    GpuPanel > .gpu--badge { color: $badge-info; }
    GpuPanel > .gpu--hint-warning { color: $warning; text-style: bold; }
    GpuPanel > .gpu--hint-critical { color: $error; text-style: bold reverse; }
    GpuPanel > .gpu--lost { color: $device-lost; text-style: bold reverse; }
    GpuPanel > .gpu--stale { color: $stale; text-style: bold; }
    GpuPanel > .gpu--spark-util { color: $plot-util; }
    GpuPanel > .gpu--spark-memory { color: $plot-memory; }
    GpuPanel > .gpu--spark-power { color: $plot-power; }
    """

    GAP_X = 2  # columns between cards
    GAP_Y = 1  # blank lines between rows of cards

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.cards: dict[int, GpuCard] = {}
        self.order: list[int] = []
        self.compact = False
        self.rates = False
        self.columns = 1
        self.mig_style = "lines"
        self.stale_after_s = 3.0
        self._styles: dict[tuple[str, bool], Style] = {}
        self._strips: dict[int, tuple[tuple, Strip]] = {}
        self._rows: list[tuple[int, int]] = []  # (top, height) of each row of cards

    # ------------------------------------------------------------------ geometry
    @property
    def gap_y(self) -> int:
        return 0 if self.compact else self.GAP_Y

    def card_width(self, width: int | None = None) -> int:
        width = self.size.width if width is None else width
        cols = self.columns
        return max(1, (width - (cols - 1) * self.GAP_X) // cols)

    def _measure_rows(self) -> None:
        self._rows = []
        top = 0
        for start in range(0, len(self.order), self.columns):
            height = max(self.cards[i].height() for i in self.order[start:start + self.columns])
            self._rows.append((top, height))
            top += height + self.gap_y

    def content_height(self) -> int:
        if not self._rows:
            return 0
        top, height = self._rows[-1]
        return top + height

    def _row_at(self, vy: int) -> tuple[int, int] | None:
        """(row, line within its cards) at virtual line ``vy``, or None in a gap or past the end."""
        for row, (top, height) in enumerate(self._rows):
            if top <= vy < top + height:
                return row, vy - top
        return None

    def place(self, index: int, card_width: int | None = None) -> tuple[int, int]:
        """(x, y) of a card's top-left cell in the panel's virtual space; ``card_width`` where
        the caller has it (the panel's size is worked out anew on each look)."""
        row, col = divmod(self.order.index(index), self.columns)
        cw = self.card_width() if card_width is None else card_width
        return col * (cw + self.GAP_X), self._rows[row][0]

    def _row_height(self, index: int) -> int:
        return self._rows[self.order.index(index) // self.columns][1]

    def configure(self, compact: bool, columns: int, mig_style: str = "lines",
                  rates: bool = False) -> None:
        columns = max(1, columns)
        rates = rates and not compact
        if (compact, columns, mig_style, rates) == (self.compact, self.columns, self.mig_style,
                                                    self.rates):
            return
        self.compact, self.columns, self.mig_style, self.rates = compact, columns, mig_style, rates
        for card in self.cards.values():
            self._lay_out(card)
        self._relines_all()

    def _lay_out(self, card: GpuCard) -> None:
        """Give a card the panel's layout, to compose its lines (all of them again) by."""
        card.compact, card.mig_style, card.rates = self.compact, self.mig_style, self.rates
        card.width = 0

    # ------------------------------------------------------------------ feeding
    def update(self, devices, when: float | None = None, hints=()) -> None:
        """Take one reading of each device (appending to each card's history)."""
        from gputop.tui.widgets.hintbar import card_badges, instance_badges

        added = reshaped = False
        for dev in devices:
            card = self.cards.get(dev.index)
            if card is None:
                card = self.cards[dev.index] = GpuCard(dev.index)
                self._lay_out(card)
                card.stale_after_s = self.stale_after_s
                added = True
            height = card.height()
            card.update(dev, when)
            reshaped |= card.height() != height
            card.hints = card_badges(hints, dev.index) if hints else []
            card.instance_hints = instance_badges(hints, dev.index) if dev.mig_instances else {}
        if added or reshaped:  # a GPU came, or its MIG instances changed: lay out again
            self.order = sorted(self.cards)
            self._relines_all()
            return
        width, height = self.size
        if width <= 0:
            return
        cw = self.card_width(width)
        top = int(self.scroll_y)
        regions = []
        for index in self.order:
            card = self.cards[index]
            changes = card.relines(cw)
            if not changes:
                continue
            x0, y0 = self.place(index, cw)
            for y in changes:
                vy = y0 + y
                self._strips.pop(vy, None)
                # The card's whole line, not the cells that moved: Textual keeps every region
                # it is handed in caches of a thousand or more, and the spans of moving digits
                # are all different (1.4 MB with the history full, #26); the whole lines cost
                # about a tenth more bytes to the terminal.
                if 0 <= vy - top < height:
                    regions.append(Region(x0, vy - top, cw, 1))
        if regions:
            self.refresh(*regions)

    def set_stale_after(self, seconds: float) -> None:
        self.stale_after_s = seconds
        for card in self.cards.values():
            card.stale_after_s = seconds

    def select(self, index: int | None) -> None:
        for i, card in self.cards.items():
            if card.selected != (i == index):
                card.selected = i == index
                self._forget_card(i)
        if index in self.cards:
            x, y = self.place(index)
            self.scroll_to_region(Region(x, y, 1, self._row_height(index)), animate=False)

    def _forget_card(self, index: int) -> None:
        x, y = self.place(index)
        height = self._row_height(index)
        for vy in range(y, y + height):
            self._strips.pop(vy, None)
        self.refresh(Region(0, y - int(self.scroll_y), self.size.width, height))

    def _relines_all(self) -> None:
        width = self.size.width
        if width > 0:
            cw = self.card_width(width)
            for card in self.cards.values():
                card.relines(cw)
        self._measure_rows()
        self._strips.clear()
        self.virtual_size = Size(width, self.content_height())
        self.refresh()

    # ------------------------------------------------------------------ rendering
    def _style(self, cls: str, selected: bool = False) -> Style:
        key = (cls, selected)
        style = self._styles.get(key)
        if style is None:
            base = self.rich_style
            if selected:
                base = base + self.get_component_rich_style("gpu--selected", partial=True)
            style = base if not cls else base + self.get_component_rich_style(cls, partial=True)
            if selected and cls == "gpu--title":
                # Marked by more than a background tint, which NO_COLOR and the 16-colour theme
                # do not draw.
                style += self.get_component_rich_style("gpu--selected-title", partial=True)
            self._styles[key] = style
        return style

    def on_resize(self) -> None:
        self._relines_all()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        vy = y + int(self.scroll_y)
        at = self._row_at(vy)
        cw = self.card_width(width)
        parts = []
        if at is not None:
            row, line = at
            for col in range(self.columns):
                n = row * self.columns + col
                if n >= len(self.order):
                    break
                card = self.cards[self.order[n]]
                if card.width != cw:
                    card.relines(cw)
                # a card shorter than its row's tallest keeps its column with a blank line
                spans = card.lines[line] if line < len(card.lines) else ((" " * cw, ""),)
                parts.append((spans, card.selected))
        key = (width, tuple(parts))
        cached = self._strips.get(vy)
        if cached is not None and cached[0] == key:
            return cached[1]
        segments = []
        for n, (spans, selected) in enumerate(parts):
            if n:
                segments.append(Segment(" " * self.GAP_X, self._style("")))
            for text, cls in spans:
                if text:
                    segments.append(Segment(text, self._style(cls, selected)))
        strip = line_strip(segments, width, self._style(""),
                           all(fmt.one_cell_each(seg.text) for seg in segments))
        self._strips[vy] = (key, strip)
        return strip

    def card_at(self, x: int, y: int) -> int | None:
        at = self._row_at(y + int(self.scroll_y))
        if at is None:
            return None
        row = at[0]
        col = x // (self.card_width() + self.GAP_X)
        n = row * self.columns + min(col, self.columns - 1)
        return self.order[n] if 0 <= n < len(self.order) else None

    def on_click(self, event) -> None:
        index = self.card_at(event.x, event.y)
        if index is not None:
            self.post_message(self.Selected(index))
