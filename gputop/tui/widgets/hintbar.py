"""The hint bar: one line under the header naming the most severe hint, so that what gputop
noticed (a straggler, an idle GPU holding memory, …) shows on the main view and not only in the
saturation panel; `s` opens the panel at the hint's GPU. The line is there from the first frame,
blank while no hint is active: a hint that comes or goes moves nothing under it."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widget import Widget

from gputop.core.model import Hint
from gputop.core.visible import visible
from gputop.tui.widgets.strips import TextLines

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
MARK = {"critical": "✖", "warning": "▲", "info": "●"}


def ranked(hints: Sequence[Hint]) -> list[Hint]:
    """Most severe first; then by GPU."""
    return sorted(hints, key=lambda h: (SEVERITY_ORDER.get(h.severity, 3),
                                        -1 if h.device is None else h.device))


def hint_line(hints: Sequence[Hint]) -> tuple[str, str, int | None] | None:
    """(text, severity, GPU) of the bar for ``hints``, or None when there are none."""
    if not hints:
        return None
    order = ranked(hints)
    top = order[0]
    where = "node" if top.device is None else f"GPU {top.device}"
    more = f"+{len(order) - 1} more, " if len(order) > 1 else ""
    # what and where first: the message is cut at the right edge of a narrow terminal
    text = f"{MARK.get(top.severity, '●')} {where} {top.code} ({more}s: details): {top.message}"
    return text, top.severity, top.device


def card_badges(hints: Sequence[Hint], index: int) -> list[tuple[str, str]]:
    """(code, severity) of one GPU's hints, most severe first."""
    return [(h.code, h.severity) for h in ranked(hints) if h.device == index]


def instance_badges(hints: Sequence[Hint], index: int) -> dict[int, list[tuple[str, str]]]:
    """(code, severity) of the hints about each MIG GPU instance of one GPU, by instance id."""
    out: dict[int, list[tuple[str, str]]] = {}
    for h in ranked(hints):
        if h.device == index and h.gpu_instance_id is not None:
            out.setdefault(h.gpu_instance_id, []).append((h.code, h.severity))
    return out


class HintBar(TextLines, Widget):
    COMPONENT_CLASSES = {"hintbar--critical", "hintbar--warning", "hintbar--info"}
    DEFAULT_CSS = """
    HintBar { height: 1; background: $background; }
    HintBar > .hintbar--critical { color: $error; text-style: bold; }
    HintBar > .hintbar--warning { color: $warning; text-style: bold; }
    HintBar > .hintbar--info { color: $foreground; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.line: tuple[str, str, int | None] | None = None

    @property
    def device(self) -> int | None:
        return self.line[2] if self.line else None

    def show(self, hints: Sequence[Hint]) -> None:
        line = hint_line(hints)
        if line == self.line:
            return
        self.line = line
        self.refresh()

    def render(self) -> Text:
        if self.line is None:
            return Text("")
        text, severity, _ = self.line
        style = self.get_component_rich_style(f"hintbar--{severity}"
                                              if severity in SEVERITY_ORDER else "hintbar--info")
        # a hint names processes and jobs: made visible, as every name is
        return Text(visible(text), style=style, no_wrap=True, overflow="ellipsis", end="")
