"""The saturation panel: how loaded each GPU really is, and why it is not more.

Per GPU, "GPU-Util (busy time)" side by side with what GPM measures - SM active, occupancy,
tensor, DRAM bandwidth, the FP pipes and the link rates - as bars with a short history, a
one-line verdict, and an estimate of achieved tensor TFLOPS and DRAM bandwidth against the part's
dense peak (labelled as an estimate). Where saturation is not measured (no GPM, npu-smi) the
block shows the time-based fallback, says plainly what cannot be measured, and shows the link
rates where the driver's own counters give them (NVML without GPM).

Interface for the app: mount ``SaturationPanel()`` and call
``panel.update_snapshot(snapshot, history)`` on each tick (``history``: the sampler's
gputop.history.History, optional: the bars' sparklines read their past there).
Up to 8 GPUs get a 7-line block each (two columns from 100 cells wide); more GPUs, a panel too
short for the blocks, a GPU split into MIG instances, or ``compact=True`` get one line each
(``compact=False`` forces blocks). After the hints, a table of each GPU's facts (Bus-Id,
persistence, compute and MIG modes: gputop/tui/text/facts.py), one line per GPU whatever the
form, so the bars and verdicts keep their room above. Under a MIG GPU's line, one line per GPU instance shows its
own GPM (SM, tensor, DRAM, occupancy): GPM runs per GPU instance.

Colours come from the app's theme variables (``$gauge-low``/``-mid``/``-high``/``-empty``, falling
back to ``$success``/``$warning``/``$error``/``$panel`` when a theme lacks them), read at render
time so a theme switch repaints correctly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.color import Color
from textual.containers import Container, VerticalScroll
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Static

from gputop.analysis.mig import sm_active
from gputop.analysis.saturation import (
    capability_note,
    estimates,
    fallback_view,
    measured,
    unmeasured_line,
    verdict,
)
from gputop.core.formatting import pct
from gputop.core.model import Device, Hint, MigInstance, Saturation, Snapshot
from gputop.core.units import MIB_PER_GIB
from gputop.core.vendors import clock_label
from gputop.core.visible import visible
from gputop.history import History
from gputop.history.fields import DEVICE_FIELDS
from gputop.tui.text.facts import facts_table
from gputop.tui.text.fmt import bar, level, short_name
from gputop.tui.widgets.strips import TextLines

LEGEND = ("busy = GPU-Util (time a kernel ran) · SM = SM active · occ = occupancy · "
          "tens = tensor · est. = estimate vs peak")
LEGEND_FALLBACK = ("busy = GPU-Util: time any kernel ran, not how much of the GPU · pSM = "
                   "processes' SM% (also time) · clk = {clock} clock / max · pwr = power / limit")


def fallback_legend(snapshot: Snapshot) -> str:
    """Return the legend of the unmeasured view, its clock named as the GPUs' vendor names it
    (SCLK on AMD, GT on Intel; "main" where the node mixes names)."""
    labels = {clock_label(d.vendor) for d in snapshot.devices}
    return LEGEND_FALLBACK.format(clock=labels.pop() if len(labels) == 1 else "main")
BLOCK_HEIGHT = 7
COMPACT_ABOVE = 8  # more GPUs than this: one line each
WIDE_FROM = 100  # two columns of blocks from this panel width

_SPARK = "▁▂▃▄▅▆▇█"

# (metric key, label) for the measured rows; values are percentages
MEASURED_ROWS = (
    (("busy", "busy"), ("sm", "SM")),
    (("occ", "occ"), ("tensor", "tens")),
)
_COLOR_FALLBACK = {
    "gauge-low": "success",
    "gauge-mid": "warning",
    "gauge-high": "error",
    "gauge-empty": "panel",
    "muted": "foreground-muted",
}


# ---------------------------------------------------------------- pure text helpers
def sparkline(values: Sequence[float | None], width: int, top: float = 100.0) -> str:
    """The last ``width`` values as block characters; a missing value is a space."""
    if width <= 0:
        return ""
    tail = list(values)[-width:]
    out = []
    for v in tail:
        if v is None:
            out.append(" ")
        else:
            out.append(_SPARK[max(0, min(7, int(v / top * 7.999)))])
    return "".join(out).rjust(width)


def rate_text(mibps: float | None) -> str:
    if mibps is None:
        return "N/A"
    if mibps >= MIB_PER_GIB:
        return f"{mibps / MIB_PER_GIB:.1f} GiB/s"
    return f"{mibps:.0f} MiB/s"


def rate_pair(rx: float | None, tx: float | None) -> str:
    """'↓297 ↑88 MiB/s': both directions in the unit the larger one needs."""
    if rx is None and tx is None:
        return "N/A"
    big = max(v for v in (rx, tx) if v is not None)
    div, unit = (1024.0, "GiB/s") if big >= 1024 else (1.0, "MiB/s")

    def f(v: float | None) -> str:
        if v is None:
            return "N/A"
        return f"{v / div:.1f}" if div > 1 else f"{v:.0f}"
    return f"↓{f(rx)} ↑{f(tx)} {unit}"


def link_line(sat: Saturation) -> str:
    """'PCIe ↓297 ↑88 MiB/s   NVLink ↓19.5 ↑19.5 GiB/s'."""
    return (f"PCIe {rate_pair(sat.pcie_rx_mibps, sat.pcie_tx_mibps)}   "
            f"NVLink {rate_pair(sat.nvlink_rx_mibps, sat.nvlink_tx_mibps)}")


def gpu_list(indices: Sequence[int]) -> str:
    """[0, 1, 2, 3, 5] → '0-3, 5'."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(set(indices)):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
        run = [i]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
    return ", ".join(out)


# The percentages the panel draws, each a field of the sampler's history (gputop.history.fields)
GAUGES = {
    "busy": "utilization_gpu_pct",
    "sm": "sm_active_pct",
    "occ": "sm_occupancy_pct",
    "tensor": "tensor_active_pct",
    "dram": "dram_bw_pct",
    "proc": "process_sm_pct",
    "clock": "clock_sm_pct",
    "power": "power_pct",
}
_READ = {f.name: f.read for f in DEVICE_FIELDS}


def metrics(dev: Device) -> dict[str, float | None]:
    """The percentages the panel draws for one device."""
    return {key: _READ[name](dev) for key, name in GAUGES.items()}


def _rich_style(value: str | None) -> Style | str:
    """A theme colour (hex with alpha, ansi_* names) as a Rich style; "default" if unusable."""
    if not value:
        return "default"
    try:
        return Style(color=Color.parse(value).rich_color)
    except Exception:
        return "default"


# ---------------------------------------------------------------- one GPU
class GpuSaturation(TextLines, Widget):
    """One GPU's block (or line, when compact). Fed by the panel; its sparklines read the
    sampler's history. Its lines go to the screen as Strips of its own (TextLines): the panel's
    first open drew them through Textual's content and styles at 150 µs a line (#26)."""

    DEFAULT_CSS = """
    GpuSaturation { height: 7; width: 1fr; }
    GpuSaturation.-compact { height: auto; }
    """

    def __init__(self, index: int) -> None:
        super().__init__(id=f"sat-gpu-{index}")
        self.index = index
        self.device: Device | None = None
        self.verdict_text = ""
        self.history: History | None = None
        self.compact = False
        # (width, compact) -> the Text drawn: a frame draws it again without building it
        self._text: tuple[tuple[int, bool], Text] | None = None

    def feed(self, dev: Device, verdict_text: str) -> None:
        self.device = dev
        self.verdict_text = visible(verdict_text)  # it quotes a lost GPU's reason
        self._text = None
        self.refresh()

    def past(self, key: str, width: int) -> list[float | None]:
        """The newest ``width`` readings of one gauge, from the sampler's history."""
        if self.history is None:
            return [metrics(self.device)[key]] if self.device is not None else []
        return self.history.device_series(self.index, GAUGES[key], points=width)[1]

    # -- rendering
    def _colors(self) -> dict[str, Style | str]:
        try:
            variables = self.app.theme_variables
        except Exception:  # not mounted in an app: plain colours
            variables = {}
        out = {}
        for name, fallback in _COLOR_FALLBACK.items():
            out[name] = _rich_style(variables.get(name) or variables.get(fallback))
        return out

    def render(self) -> Text:
        return self._text_for(self.size.width)

    def get_content_height(self, container, viewport, width: int) -> int:
        # a compact line takes a second line for its verdict where the width is short
        return len(self._text_for(width).split())

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._text = None  # another theme: other colours

    def _text_for(self, width: int) -> Text:
        """Return the block's Text at ``width``, built once per sample, width and form (the
        panel's first open draws each block in four frames)."""
        key = (width, self.compact)
        if self._text is None or self._text[0] != key:
            self._text = (key, self._content(width))
        return self._text[1]

    def _content(self, width: int) -> Text:
        dev = self.device
        width = max(20, width)
        if dev is None:
            return Text(f"GPU {self.index}: waiting for the first sample", style="dim")
        if self.compact:
            return self._compact_line(dev, width)
        return Text("\n").join(self._block(dev, width))

    def _gauge(self, text: Text, key: str, label: str, value: float | None, bar_w: int,
               spark_w: int, colors: dict[str, Style | str]) -> None:
        filled, empty = bar(value, bar_w)
        color = colors.get(f"gauge-{level(value)}", "default") if value is not None else "default"
        text.append(f"{label:<5}", style="bold")
        text.append(filled, style=color)
        text.append(empty, style=colors["gauge-empty"])
        text.append(pct(value))
        if spark_w > 0:
            text.append(" ")
            text.append(sparkline(self.past(key, spark_w), spark_w), style=color)

    def _row(self, pairs, width: int, dev: Device, colors: dict[str, Style | str]) -> Text:
        m = metrics(dev)
        half = (width - 3) // 2
        bar_w = max(4, min(12, half // 3))
        spark_w = max(0, half - 5 - bar_w - 4 - 1)
        t = Text()
        for n, (key, label) in enumerate(pairs):
            if n:
                t.append(" │ ", style=colors["muted"])
            cell = Text()
            self._gauge(cell, key, label, m.get(key), bar_w, spark_w, colors)
            cell.truncate(half, pad=True)
            t.append_text(cell)
        return t

    def _title(self, dev: Device, width: int) -> Text:
        t = Text()
        t.append(f"GPU {dev.index} ", style="bold")
        t.append(short_name(dev.name)[:22])
        t.append(" · ", style="dim")
        t.append(self.verdict_text, style="italic" if dev.status == "ok" else "bold red")
        t.truncate(width, overflow="ellipsis")
        return t

    def _block(self, dev: Device, width: int) -> list[Text]:
        colors = self._colors()
        lines = [self._title(dev, width)]
        if dev.status != "ok":
            lines.append(Text("  no readings: " + visible(dev.status_reason or dev.status),
                              style="dim"))
            return lines
        if measured(dev):
            lines.append(self._row((("busy", "busy"), ("sm", "SM")), width, dev, colors))
            lines.append(self._row((("occ", "occ"), ("tensor", "tens")), width, dev, colors))
            sat = dev.saturation
            t = self._row((("dram", "DRAM"),), width, dev, colors)
            t.truncate((width - 3) // 2, pad=True)
            t.append(" │ ", style=colors["muted"])
            t.append(" ".join(f"{name} {pct(v).strip()}" for name, v in
                              (("FP16", sat.fp16_pct), ("FP32", sat.fp32_pct),
                               ("FP64", sat.fp64_pct))))
            lines.append(t)
            lines.append(Text(link_line(sat)))
            lines.append(self._estimate_line(dev))
        else:
            view = fallback_view(dev)
            lines.append(self._row((("busy", "busy"), ("proc", "pSM")), width, dev, colors))
            lines.append(self._row((("clock", "clk"), ("power", "pwr")), width, dev, colors))
            if dev.clock_event_reasons is None:  # no reasons read: "none" would claim some could be
                slow = "not reported by the driver"
            else:
                slow = ", ".join(view.slowdowns) if view.slowdowns else "none"
            lines.append(Text(f"clock slowdowns: {slow}"))
            lines.append(Text(unmeasured_line(dev), style=colors["muted"]))
            sat = dev.saturation
            if any(v is not None for v in (sat.pcie_rx_mibps, sat.pcie_tx_mibps,
                                           sat.nvlink_rx_mibps, sat.nvlink_tx_mibps)):
                # without GPM, from the driver's own link counters (NVML)
                lines.append(Text(link_line(sat)))
        for line in lines:
            line.truncate(width, overflow="ellipsis")
        return lines

    def _estimate_line(self, dev: Device) -> Text:
        est = estimates(dev)
        parts = []
        if est.tensor_tflops_estimate is not None:
            parts.append(f"~{est.tensor_tflops_estimate:.0f}/{est.tensor_peak_tflops:.0f} TFLOPS "
                         "tensor")
        if est.dram_gbps_estimate is not None:
            parts.append(f"~{est.dram_gbps_estimate / 1000:.2f}/"
                         f"{cast(float, est.dram_peak_gbps) / 1000:.2f} TB/s DRAM")
        if not parts:
            why = "part not in the peak table" if est.spec is None else "no checked peak figure"
            return Text(f"est. TFLOPS/bandwidth: N/A ({why})", style="dim")
        return Text(f"est. {' · '.join(parts)}", style="dim")

    def _compact_line(self, dev: Device, width: int) -> Text:
        colors = self._colors()
        m = metrics(dev)
        t = Text()
        t.append(f"GPU{dev.index:<3}", style="bold")
        keys = (("busy", "busy"), ("sm", "SM"), ("tensor", "TC"), ("dram", "DRAM")) \
            if measured(dev) else (("busy", "busy"), ("proc", "pSM"), ("clock", "clk"))
        for key, label in keys:
            _short_gauge(t, label, m.get(key), colors)
        verdict_text = Text(self.verdict_text, style="italic")
        instances = self._instance_lines(dev, width, colors)
        if t.cell_len + 2 + verdict_text.cell_len <= width:
            t.append("│ ", style=colors["muted"])
            t.append_text(verdict_text)
            return Text("\n").join([t, *instances])
        # too narrow for both (80 columns): the verdict is what the user came for, so it goes
        # whole on the lines below the bars rather than being cut to "│ waits…"
        t.truncate(width, overflow="ellipsis")
        indent = " " * 6
        wrapped = verdict_text.wrap(self.app.console, max(10, width - len(indent)))
        return Text("\n").join([t, *(Text(indent) + line for line in wrapped), *instances])

    def _instance_lines(self, dev: Device, width: int,
                        colors: dict[str, Style | str]) -> list[Text]:
        """One line per GPU instance of a MIG GPU: its own GPM, whole gauges only."""
        if dev.status != "ok":
            return []
        seen: dict[int, MigInstance] = {}
        for inst in dev.mig_instances:  # compute instances share their GPU instance's GPM
            seen.setdefault(inst.gpu_instance_id, inst)
        out = []
        for n, inst in enumerate(seen.values()):
            t = Text()
            t.append("  └ " if n == len(seen) - 1 else "  ├ ", style=colors["muted"])
            t.append(f"{inst.profile or '?':<11}", style="bold")
            t.append(f"GI {inst.gpu_instance_id:<3} ", style=colors["muted"])
            sat = inst.saturation
            for label, value in (("SM", sm_active(inst)), ("TC", sat.tensor_active_pct),
                                 ("DRAM", sat.dram_bw_pct), ("occ", sat.sm_occupancy_pct)):
                if t.cell_len + len(label) + 1 + 6 + 5 > width:
                    break
                _short_gauge(t, label, value, colors)
            out.append(t)
        return out


def _short_gauge(t: Text, label: str, value: float | None,
                 colors: dict[str, Style | str]) -> None:
    """'SM ████░░  62% ': a compact line's gauge (a GPU's, or a MIG instance's under it)."""
    filled, empty = bar(value, 6)
    color = colors.get(f"gauge-{level(value)}", "default") if value is not None else "default"
    t.append(f"{label} ")
    t.append(filled, style=color)
    t.append(empty, style=colors["gauge-empty"])
    t.append(pct(value) + " ")


# ---------------------------------------------------------------- the panel
class SaturationPanel(VerticalScroll):
    """All GPUs' saturation blocks, the capability note and the hints."""

    # the scrollbar's gutter kept from the first frame: the facts under the blocks overflow a
    # screen of 40 lines, and a scrollbar coming after the first frame narrowed every card (#26)
    DEFAULT_CSS = """
    SaturationPanel { height: 1fr; scrollbar-gutter: stable; }
    SaturationPanel > #sat-legend { color: $text-muted; height: auto; padding: 0 1; }
    SaturationPanel > #sat-note { color: $warning; height: auto; padding: 0 1; }
    SaturationPanel > #sat-grid {
        layout: grid; grid-size: 1; grid-gutter: 0 2; grid-rows: 7; height: auto; padding: 0 1;
    }
    SaturationPanel.-wide > #sat-grid { grid-size: 2; }
    SaturationPanel.-compact > #sat-grid { grid-size: 1; grid-rows: auto; }
    SaturationPanel > #sat-hints { height: auto; padding: 0 1; }
    SaturationPanel > #sat-facts { height: auto; padding: 1 1 0 1; }
    """

    def __init__(self, *, compact: bool | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.forced_compact = compact
        self.cards: dict[int, GpuSaturation] = {}
        self.snapshot: Snapshot | None = None

    def compose(self) -> ComposeResult:
        yield Static(LEGEND, id="sat-legend")
        yield Static("", id="sat-note")
        yield Container(id="sat-grid")
        yield Static("", id="sat-hints")
        yield Static("", id="sat-facts")

    @property
    def compact(self) -> bool:
        """One line per GPU: forced, or more than 8 GPUs, a MIG GPU (its instances' lines follow
        its own), or blocks that would not fit."""
        if self.forced_compact is not None:
            return self.forced_compact
        n = len(self.cards)
        if n > COMPACT_ABOVE:
            return True
        if self.snapshot is not None and any(d.mig_instances for d in self.snapshot.devices):
            return True
        width, height = self._room()
        if not height:
            return False
        columns = 2 if width >= WIDE_FROM else 1
        return -(-n // columns) * BLOCK_HEIGHT + 3 > height

    def update_snapshot(self, snapshot: Snapshot, history: History | None = None) -> None:
        """Show one snapshot (call on every tick). ``history``: the sampler's, which holds it."""
        self.snapshot = snapshot
        grid = self.query_one("#sat-grid", Container)
        present = {d.index for d in snapshot.devices}
        for index in [i for i in self.cards if i not in present]:  # device deselected or gone
            self.cards.pop(index).remove()
        new = [d for d in snapshot.devices if d.index not in self.cards]
        for dev in new:
            card = GpuSaturation(dev.index)
            card.history = history
            self.cards[dev.index] = card
        if new:
            grid.mount_all([self.cards[d.index] for d in new])
        self._apply_layout()
        hints = snapshot.hints
        for dev in snapshot.devices:
            self.cards[dev.index].feed(dev, verdict(dev, [snapshot], hints))
        any_measured = any(measured(d) for d in snapshot.devices if d.status == "ok")
        self.query_one("#sat-legend", Static).update(
            LEGEND if any_measured else fallback_legend(snapshot))
        self.query_one("#sat-note", Static).update(self.note_text(snapshot))
        self.query_one("#sat-hints", Static).update(self.hints_text(hints))
        self.query_one("#sat-facts", Static).update(self.facts_text(snapshot))

    @staticmethod
    def note_text(snapshot: Snapshot) -> Text:
        """What cannot be measured on this backend, once per distinct note."""
        notes: dict[str, list[int]] = {}
        for dev in snapshot.devices:
            note = capability_note(dev)
            if note:
                notes.setdefault(note, []).append(dev.index)
        t = Text()
        for n, (note, gpus) in enumerate(notes.items()):
            if n:
                t.append("\n")
            if len(gpus) < len(snapshot.devices):
                t.append(f"GPU {', '.join(map(str, gpus))}: ", style="bold")
            t.append(note)
        return t

    @staticmethod
    def facts_text(snapshot: Snapshot) -> Text:
        """The GPUs' facts table, its heads in bold (values made visible: a remote agent's)."""
        head, *rows = facts_table(snapshot.devices)
        return Text("\n").join([Text(visible(head), style="bold"),
                                *(Text(visible(row)) for row in rows)])

    @staticmethod
    def hints_text(hints: Sequence[Hint]) -> Text:
        t = Text()
        if not hints:
            t.append("No hints: nothing holds these GPUs back that gputop can see.", style="dim")
            return t
        t.append("Hints", style="bold underline")
        # one entry per (severity, code): eight GPUs of one job usually share a hint
        groups: dict[tuple[str, str], list[Hint]] = {}
        for h in hints:
            groups.setdefault((h.severity, h.code), []).append(h)
        for (severity, code), group in groups.items():
            style = {"critical": "bold red", "warning": "bold yellow"}.get(severity, "cyan")
            t.append("\n")
            t.append(f"{severity} {code}", style=style)
            t.append(f": {visible(group[0].message)}")  # it names processes and jobs
            others = [h.device for h in group[1:] if h.device is not None]
            if others:
                t.append(f" (also GPU {gpu_list(others)})", style="bold")
            if group[0].advice:
                t.append(f"\n  → {visible(group[0].advice)}", style="dim")
        return t

    def on_resize(self) -> None:
        if self.snapshot is not None:
            self._apply_layout()

    def _apply_layout(self) -> None:
        compact = self.compact
        self.set_class(compact, "-compact")
        for card in self.cards.values():
            if card.compact != compact:
                card.compact = compact
                card.set_class(compact, "-compact")
                card.refresh()
        self._update_width_class()

    def _update_width_class(self) -> None:
        self.set_class(self._room().width >= WIDE_FROM and not self.compact, "-wide")

    def _room(self) -> Size:
        """Return the panel's size; before its first layout, the screen's (the panel fills it
        but for a title line): its first frame has the form it keeps, not one column and then
        two a frame later (#26: three layouts at the first `s`)."""
        return self.size if self.size.area else self.screen.size
