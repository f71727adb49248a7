"""The one-line header: host, backend (SIMULATED shouts), versions, GPU count, interval, clock,
and the paused / recording / replay state. Repaints only when its text changes."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from gputop.core.visible import visible
from gputop.tui.widgets.strips import TextLines


@dataclass(frozen=True)
class HeaderState:
    host: str = "?"
    backend: str = "?"
    driver: str | None = None
    cuda: str | None = None
    gpus: int = 0
    interval: float = 1.0
    clock: float | None = None  # the last sample's time
    paused: bool = False
    readonly: bool = False  # --readonly: nothing here changes anything (#27: it did not say so)
    recording: str | None = None  # "file rows"
    replay: str | None = None  # "▶ pos / duration x speed" (⏸ while paused)
    error: str | None = None  # the last sampling error, while it lasts
    stale_s: float | None = None  # seconds since the last sample, when late
    view: str | None = None  # what hides processes: "filter 'x' · GPU 3 only"
    alerts: int = 0  # alerts firing that nobody acknowledged (the `!` screen)


def _interval(seconds: float) -> str:
    return f"{seconds:g}s"


class Header(TextLines, Widget):
    COMPONENT_CLASSES = {"header--title", "header--sim", "header--muted", "header--paused",
                         "header--rec", "header--error", "header--stale", "header--view",
                         "header--alerts"}
    DEFAULT_CSS = """
    Header { height: 1; background: $panel; color: $foreground; }
    Header > .header--title { color: $primary; text-style: bold; }
    Header > .header--sim { background: $simulated; color: $background; text-style: bold; }
    Header > .header--muted { color: $muted; }
    Header > .header--paused { background: $warning; color: $background; text-style: bold; }
    Header > .header--rec { color: $recording; text-style: bold; }
    Header > .header--error { color: $error; text-style: bold; }
    Header > .header--stale { color: $stale; text-style: bold; }
    Header > .header--view { color: $accent; text-style: bold; }
    Header > .header--alerts { color: $error; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.state = HeaderState()
        self._plain = ""
        self._text: Text | None = None
        self._styles: dict = {}

    def set(self, **changes) -> None:
        self.state = replace(self.state, **changes)
        self._update()

    def _component_style(self, name: str):
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(name)
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = {}
        self._text = None
        self._plain = ""
        self.refresh()

    def on_resize(self) -> None:
        self._plain = ""
        self._update()

    def build(self, width: int) -> Text:
        s = self.state
        st = self._component_style
        # (text, style, priority): lower priority parts go first when the line is too narrow.
        parts: list[tuple[str, Style | str, int]] = [("gputop ", st("header--title"), 0),
                                                (s.host, "", 0)]
        if s.backend == "sim":
            parts.append((" ", "", 0))
            parts.append((" SIMULATED ", st("header--sim"), 0))
        else:
            parts.append((f"  {s.backend}", "", 1))
        if s.replay:
            parts.append((f"  {s.replay}", st("header--title"), 0))
        if s.driver:
            parts.append((f"  driver {s.driver}", st("header--muted"), 4))
        if s.cuda:
            parts.append((f"  CUDA {s.cuda}", st("header--muted"), 4))
        parts.append((f"  {s.gpus} GPU{'s' if s.gpus != 1 else ''}", "", 2))
        parts.append((f"  every {_interval(s.interval)}", "", 1))
        if s.readonly:
            parts.append(("  READ-ONLY", st("header--view"), 0))
        if s.paused:
            parts.append(("  ", "", 0))
            parts.append((" PAUSED ", st("header--paused"), 0))
        if s.recording:
            parts.append((f"  ● REC {s.recording}", st("header--rec"), 0))
        if s.alerts:
            noun = "alert" if s.alerts == 1 else "alerts"
            parts.append((f"  ▲ {s.alerts} {noun} (!)", st("header--alerts"), 0))
        if s.view:
            parts.append((f"  {s.view}", st("header--view"), 0))
        if s.stale_s is not None:
            parts.append((f"  no sample for {s.stale_s:.0f}s", st("header--stale"), 0))
        if s.error:
            parts.append((f"  {s.error}", st("header--error"), 1))
        # the host, driver and error are what the node (an agent, a Prometheus target) said
        parts = [(visible(t), style, priority) for t, style, priority in parts]
        clock = time.strftime("%H:%M:%S", time.localtime(s.clock)) if s.clock else "--:--:--"
        tail = f" {clock}"
        budget = width - len(tail)
        for drop in (4, 3, 2, 1):
            if sum(len(t) for t, _, _ in parts) <= budget:
                break
            parts = [p for p in parts if p[2] < drop]
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        for t, style, _ in parts:
            text.append(t, style or None)
        text.truncate(max(0, budget), overflow="ellipsis")
        text.pad_right(max(0, budget - text.cell_len))
        text.append(tail, st("header--muted"))
        return text

    def _update(self) -> None:
        width = self.size.width
        if width <= 0:
            return
        text = self.build(width)
        if text.plain != self._plain or self._text is None:
            self._plain = text.plain
            self._text = text
            self.refresh()

    def render(self) -> Text:
        if self._text is None:
            self._update()
        return self._text or Text("")
