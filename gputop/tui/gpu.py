"""One GPU's widget: a 4-line card (bars and sparkline history) or a compact single line.

Rendering uses the Line API with a per-line cache: each tick the card works out the text of its
lines, and only lines whose text changed are re-rendered and repainted. At 1 s with 8 GPUs most
ticks touch a handful of cells, so the terminal sees little more than the digits that moved.
"""

from __future__ import annotations

import time
from collections import deque
from itertools import islice

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from gputop.clock_events import LABELS, SLOWDOWNS
from gputop.model import Device
from gputop.tui import fmt

HISTORY_POINTS = 300
SPARK_BUCKET = 4  # samples per sparkline cell
CARD_HEIGHT = 4
CARD_MIN_WIDTH = 50

# (text, component class or "" for the widget's own style)
Span = tuple[str, str]
Line = tuple[Span, ...]


def short_name(name: str | None) -> str:
    if not name:
        return "unknown device"
    for prefix in ("NVIDIA ", "Tesla "):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def badges(dev: Device) -> list[Span]:
    out: list[Span] = []
    for reason in dev.clock_event_reasons or ():
        if reason == "gpu_idle" and (dev.utilization_gpu_pct or 0) > 0:
            continue  # NVML sets it between kernels of a busy GPU: noise, not news
        label = LABELS.get(reason, reason)
        cls = "gpu--slowdown" if reason in SLOWDOWNS else "gpu--badge"
        out.append((f"[{label}]", cls))
    return out


def _gauge_cls(pct: float | None) -> str:
    return {"low": "gpu--low", "mid": "gpu--mid", "high": "gpu--high"}.get(fmt.level(pct),
                                                                           "gpu--muted")


def _bar_spans(pct: float | None, width: int) -> list[Span]:
    filled, empty = fmt.bar(pct, width)
    return [(filled, _gauge_cls(pct)), (empty, "gpu--empty")]


def _join(spans: list[Span], width: int) -> Line:
    """Cut or pad a list of spans to exactly ``width`` cells."""
    out: list[Span] = []
    used = 0
    for text, cls in spans:
        if used >= width:
            break
        if used + len(text) > width:
            text = text[: width - used]
        out.append((text, cls))
        used += len(text)
    if used < width:
        out.append((" " * (width - used), ""))
    return tuple(out)


class GpuCard(Widget):
    """A GPU: fed with ``update(device)``, no backend needed (the cluster view reuses it)."""

    class Selected(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    COMPONENT_CLASSES = {
        "gpu--title", "gpu--label", "gpu--low", "gpu--mid", "gpu--high", "gpu--empty",
        "gpu--muted", "gpu--slowdown", "gpu--badge", "gpu--lost", "gpu--stale", "gpu--spark-util",
        "gpu--spark-memory", "gpu--spark-power", "gpu--value",
    }

    DEFAULT_CSS = """
    GpuCard { height: 4; width: 1fr; }
    GpuCard.-compact { height: 1; }
    GpuCard.-selected { background: $selected; }
    GpuCard > .gpu--title { text-style: bold; color: $primary; }
    GpuCard > .gpu--label { color: $muted; }
    GpuCard > .gpu--value { color: $foreground; }
    GpuCard > .gpu--low { color: $gauge-low; }
    GpuCard > .gpu--mid { color: $gauge-mid; }
    GpuCard > .gpu--high { color: $gauge-high; }
    GpuCard > .gpu--empty { color: $gauge-empty; }
    GpuCard > .gpu--muted { color: $muted; }
    GpuCard > .gpu--slowdown { color: $badge-slowdown; text-style: bold; }
    GpuCard > .gpu--badge { color: $badge-info; }
    GpuCard > .gpu--lost { color: $device-lost; text-style: bold reverse; }
    GpuCard > .gpu--stale { color: $stale; text-style: bold; }
    GpuCard > .gpu--spark-util { color: $plot-util; }
    GpuCard > .gpu--spark-memory { color: $plot-memory; }
    GpuCard > .gpu--spark-power { color: $plot-power; }
    """

    def __init__(self, index: int, *, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self.index = index
        self.device: Device | None = None
        self.util_history: deque[float | None] = deque(maxlen=HISTORY_POINTS)
        self.memory_history: deque[float | None] = deque(maxlen=HISTORY_POINTS)
        self.power_history: deque[float | None] = deque(maxlen=HISTORY_POINTS)
        # The sparkline character of each point, computed once when the point arrives.
        # Sparklines: one cell per SPARK_BUCKET samples (their maximum, so a short spike shows),
        # computed once per finished bucket; only the last cell moves between buckets.
        self._spark: dict[str, deque[str]] = {
            k: deque(maxlen=HISTORY_POINTS) for k in ("util", "memory", "power")}
        self._bucket: dict[str, list[float | None]] = {k: [] for k in self._spark}
        self.stale_after_s = 3.0
        self.last_ok: float | None = None
        self._lines: list[Line] = []
        self._strips: list[Strip | None] = []
        self._styles: dict[str, Style] = {}
        self._compact = False

    # ------------------------------------------------------------------ feeding
    def update(self, device: Device, when: float | None = None) -> None:
        """Take a new reading of this GPU (appends to its history) and repaint what changed."""
        self.device = device
        ok = device.status == "ok"
        if ok:
            self.last_ok = when if when is not None else time.time()
        for key, ring, value in (("util", self.util_history, device.utilization_gpu_pct),
                                 ("memory", self.memory_history, device.memory_pct),
                                 ("power", self.power_history, device.power_pct)):
            value = value if ok else None
            ring.append(value)
            bucket = self._bucket[key]
            bucket.append(value)
            if len(bucket) >= SPARK_BUCKET:
                self._spark[key].append(fmt.spark_char(_peak(bucket)))
                bucket.clear()
        self._relines()

    def spark(self, key: str, width: int) -> str:
        """The last ``width`` points of one history ("util", "memory", "power")."""
        chars = self._spark[key]
        bucket = self._bucket[key]
        last = fmt.spark_char(_peak(bucket)) if bucket else ""
        width -= len(last)
        n = len(chars)
        if n >= width:
            return "".join(islice(chars, n - width, n)) + last
        return " " * (width - n) + "".join(chars) + last

    def set_compact(self, compact: bool) -> None:
        if compact != self._compact:
            self._compact = compact
            self.set_class(compact, "-compact")
            self._lines = []
            self._relines()

    @property
    def compact(self) -> bool:
        return self._compact

    def set_selected(self, selected: bool) -> None:
        if self.has_class("-selected") != selected:
            self.set_class(selected, "-selected")
            self._drop_styles()

    # ------------------------------------------------------------------ line text
    def _relines(self) -> None:
        width = self.size.width
        if width <= 0:
            return
        new = self.compose_lines(width)
        old = self._lines
        if len(new) != len(old):
            self._lines = new
            self._strips = [None] * len(new)
            self.refresh()
            return
        dirty = []
        for y, (a, b) in enumerate(zip(old, new, strict=False)):
            if a != b:
                self._strips[y] = None
                span = fmt.changed_span("".join(t for t, _ in a), "".join(t for t, _ in b))
                if span is None:  # same text, new colours (a gauge changed level)
                    span = (0, width)
                dirty.append(Region(span[0], y, span[1] - span[0], 1))
        self._lines = new
        if dirty:
            self.refresh(*dirty)

    def compose_lines(self, width: int) -> list[Line]:
        if self._compact:
            return [self._compact_line(width)]
        return self._card_lines(width)

    def _stale_span(self, dev: Device) -> list[Span]:
        if dev.data_age_s is not None and dev.data_age_s > self.stale_after_s:
            return [(f" stale {dev.data_age_s:.0f}s", "gpu--stale")]
        return []

    def _title(self, dev: Device | None) -> str:
        name = short_name(dev.name if dev else None)
        return f"{self.index:>2} {name}"

    def _card_lines(self, width: int) -> list[Line]:
        dev = self.device
        if dev is None:
            return [_join([(self._title(None), "gpu--title")], width),
                    _join([("   waiting for the first sample…", "gpu--muted")], width),
                    _join([], width), _join([], width)]
        if dev.status != "ok":
            return self._lost_lines(dev, width)
        info: list[Span] = [(f" {fmt.num(dev.temperature_c)}°C", "gpu--value")]
        fan = [(f" fan {fmt.num(dev.fan_pct, '.0f', '%')}", "gpu--muted")]
        pstate = [(f" {dev.pstate}", "gpu--muted")] if dev.pstate else []
        clock = [(f" SM {fmt.num(dev.clock_sm_mhz)}/{fmt.num(dev.clock_sm_max_mhz)}MHz",
                  "gpu--muted")]
        tail = badges(dev) + self._stale_span(dev)
        tail = [(" " + t, c) for t, c in tail]
        title = self._title(dev)
        # Drop the least useful facts first when the card is narrow.
        for extra in (fan + pstate + clock, pstate + clock, clock, []):
            right = info + extra + tail
            if len(title) + sum(len(t) for t, _ in right) <= width:
                break
        right_len = sum(len(t) for t, _ in right)
        title_w = max(4, width - right_len)
        head = _join([(fmt.fit(title, title_w), "gpu--title")] + right, width)
        return [head] + self._gauge_lines(dev, width)

    def _gauge_lines(self, dev: Device, width: int) -> list[Line]:
        value_w = 17
        label_w = 5
        rest = width - label_w - value_w - 1
        if rest >= 24:
            bar_w = max(8, rest // 2)
            spark_w = rest - bar_w
        else:
            bar_w, spark_w = max(3, rest), 0
        mem = (f"{fmt.num(_gib(dev.memory_used_mib), '.1f')}/"
               f"{fmt.num(_gib(dev.memory_total_mib), '.1f')}G {fmt.num(dev.memory_pct, '3.0f')}%")
        power = f"{fmt.num(dev.power_draw_w)}/{fmt.num(dev.power_limit_w)}W"
        rows = (
            ("UTIL", dev.utilization_gpu_pct, f"{fmt.num(dev.utilization_gpu_pct, '3.0f')}%",
             "util", "gpu--spark-util"),
            ("MEM", dev.memory_pct, mem, "memory", "gpu--spark-memory"),
            ("PWR", dev.power_pct, power, "power", "gpu--spark-power"),
        )
        lines = []
        for label, pct, value, hist, spark_cls in rows:
            spans: list[Span] = [(f"{label:<{label_w - 1}} ", "gpu--label")]
            spans += _bar_spans(pct, bar_w)
            spans.append((" " + fmt.fit(value, value_w - 1), "gpu--value"))
            if spark_w > 0:
                spans.append((" " + self.spark(hist, spark_w), spark_cls))
            lines.append(_join(spans, width))
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
            _join([], width),
        ]

    def _compact_line(self, width: int) -> Line:
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
        spans = list(head)
        spans += [(" U", "gpu--label")] + _bar_spans(dev.utilization_gpu_pct, bw)
        spans.append((f"{fmt.num(dev.utilization_gpu_pct, '4.0f')}%", "gpu--value"))
        spans += [(" M", "gpu--label")] + _bar_spans(dev.memory_pct, bw)
        if wide:
            spans.append((fmt.rfit(f"{fmt.num(_gib(dev.memory_used_mib), '.1f')}G", 6),
                          "gpu--value"))
        spans.append((f"{fmt.num(dev.memory_pct, '4.0f')}%", "gpu--value"))
        spans += [(" P", "gpu--label")] + _bar_spans(dev.power_pct, bw)
        spans.append((fmt.rfit(f"{fmt.num(dev.power_draw_w)}W", 5), "gpu--value"))
        spans.append((fmt.rfit(f"{fmt.num(dev.temperature_c)}°C", 6), "gpu--value"))
        if wide:
            spans.append((fmt.rfit(f"{fmt.num(dev.clock_sm_mhz)}MHz", 8), "gpu--muted"))
        tail = [(" " + t, c) for t, c in badges(dev) + self._stale_span(dev)]
        used = sum(len(t) for t, _ in spans + tail)
        spark_w = width - used - 1
        if spark_w >= 6:
            spans.append((" " + self.spark("util", spark_w), "gpu--spark-util"))
        return _join(spans + tail, width)

    # ------------------------------------------------------------------ rendering
    def _style(self, cls: str) -> Style:
        style = self._styles.get(cls)
        if style is None:
            base = self.rich_style
            style = base if not cls else base + self.get_component_rich_style(cls, partial=True)
            self._styles[cls] = style
        return style

    def _drop_styles(self) -> None:
        self._styles.clear()
        self._strips = [None] * len(self._lines)
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._drop_styles()

    def on_resize(self) -> None:
        self._lines = []
        self._relines()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if not self._lines or len(self._lines[0]) == 0:
            self._relines()
        if y >= len(self._lines):
            return Strip.blank(width, self._style(""))
        strip = self._strips[y] if y < len(self._strips) else None
        if strip is None:
            line = self._lines[y]
            segments = [Segment(text, self._style(cls)) for text, cls in line if text]
            # Every character we draw is one cell wide: tell the Strip, which saves Rich from
            # measuring block and braille characters one by one on every repaint.
            if sum(len(t) for t, _ in line) == width and all(fmt.one_cell_each(t)
                                                              for t, _ in line):
                strip = Strip(segments, cell_length=width)
            else:
                strip = Strip(segments).adjust_cell_length(width, self._style(""))
            if y < len(self._strips):
                self._strips[y] = strip
        return strip

    def on_click(self) -> None:
        self.post_message(self.Selected(self.index))

    def line_texts(self) -> list[str]:
        """The card's lines as plain text (tests, screenshots in text form)."""
        return ["".join(t for t, _ in line) for line in self._lines]


def _peak(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _gib(value: float | None) -> float | None:
    return None if value is None else value / 1024.0
