"""A minimal saturation panel: how busy each GPU really is, beside nvidia-smi's GPU-Util.

GPU-Util is only the share of time a kernel was running; SM activity, occupancy and tensor
activity say how much of the GPU that kernel used. (The saturation work replaces this panel.)
Contract used by the app: ``SaturationPanel()`` then ``update(snapshot)`` on every sample.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from gputop.model import Snapshot
from gputop.tui import fmt

FIELDS = (
    ("GPU-Util (busy time)", None),
    ("SM active", "sm_active_pct"),
    ("SM occupancy", "sm_occupancy_pct"),
    ("Tensor active", "tensor_active_pct"),
    ("DRAM bandwidth", "dram_bw_pct"),
    ("FP16", "fp16_pct"),
    ("FP32", "fp32_pct"),
    ("FP64", "fp64_pct"),
)


class SaturationPanel(Widget):
    COMPONENT_CLASSES = {"sat--low", "sat--mid", "sat--high", "sat--empty", "sat--title",
                         "sat--muted"}
    DEFAULT_CSS = """
    SaturationPanel { height: auto; padding: 0 1; }
    SaturationPanel > .sat--low { color: $gauge-low; }
    SaturationPanel > .sat--mid { color: $gauge-mid; }
    SaturationPanel > .sat--high { color: $gauge-high; }
    SaturationPanel > .sat--empty { color: $gauge-empty; }
    SaturationPanel > .sat--title { color: $primary; text-style: bold; }
    SaturationPanel > .sat--muted { color: $muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.snapshot: Snapshot | None = None

    def update(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.refresh(layout=True)

    def render(self) -> Text:
        snap = self.snapshot
        if snap is None:
            return Text("waiting for a sample…")
        st = self.get_component_rich_style
        bar_w = max(10, min(40, self.size.width - 36))
        out = Text(end="")
        for dev in snap.devices:
            out.append(f"GPU {dev.index} {dev.name or ''}\n", st("sat--title"))
            if dev.status != "ok":
                out.append(f"  {dev.status.upper()}: {dev.status_reason or ''}\n\n")
                continue
            sat = dev.saturation
            if sat.source is None:
                out.append("  this device reports no SM-level activity (GPM needs Hopper or "
                           "newer)\n", st("sat--muted"))
            for label, attr in FIELDS:
                value = dev.utilization_gpu_pct if attr is None else getattr(sat, attr)
                if attr is not None and sat.source is None:
                    continue
                filled, empty = fmt.bar(value, bar_w)
                cls = {"low": "sat--low", "mid": "sat--mid", "high": "sat--high"}.get(
                    fmt.level(value), "sat--muted")
                out.append(f"  {label:<22}")
                out.append(filled, st(cls))
                out.append(empty, st("sat--empty"))
                out.append(f" {fmt.num(value, '5.1f', '%')}\n")
            out.append("\n")
        return out

    def get_content_height(self, container, viewport, width: int) -> int:
        snap = self.snapshot
        if snap is None:
            return 1
        return sum(2 + len(FIELDS) + 1 for _ in snap.devices)
