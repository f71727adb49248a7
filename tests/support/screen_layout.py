"""The dashboard's layout read off a real terminal's text (``tmux capture-pane``), and its changes
timed from launch: where the header, host line, GPU rows and process-table header are, never what
they say, so that a clock that ticks or a bar that grows is no change while a host line that pushes
the cards down is (#26: one layout from the first frame).

Used by the end-to-end test that holds that guarantee and by bench/layout.py, which times it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# A region's row: the header starts with the program's name; the host line with its CPU figure;
# the process table's header names PID. (The footer is docked to the last row.)
HEADER = re.compile(r"^gputop\b")
HOST = re.compile(r"^CPU\b")
TABLE = re.compile(r"\bPID\b")
# A GPU's title, on a card or a one-line GPU row: its index, a space and its name, at the start of
# the line or after a gap (cards side by side).
GPU_TITLE = re.compile(r"(?:^|(?<=\s\s))\s?(\d{1,3}) (?=[A-Za-z])")

Layout = tuple[tuple[str, int, int], ...]  # (region, row, column), top to bottom


def layout_of(screen: str) -> Layout:
    """Return where the dashboard's regions are on ``screen`` (a pane's text, one line a row).

    GPU titles count above the process table's header only: the table's own rows also start
    with a GPU index. The hint bar is no region of its own: it shows where its line is, and one
    that comes or goes moves every row under it."""
    lines = screen.split("\n")
    table = next((y for y, line in enumerate(lines) if TABLE.search(line)), None)
    found: list[tuple[str, int, int]] = []
    for y, line in enumerate(lines):
        if HEADER.search(line):
            found.append(("header", y, 0))
        elif HOST.search(line):
            found.append(("host", y, 0))
        elif y == table:
            found.append(("table", y, 0))
        elif table is None or y < table:
            found.extend(("gpu", y, m.start(1)) for m in GPU_TITLE.finditer(line))
    return tuple(found)


def is_full(layout: Layout) -> bool:
    """Whether ``layout`` has the header, at least one GPU and the process table's header."""
    regions = {region for region, _, _ in layout}
    return {"header", "gpu", "table"} <= regions


@dataclass
class LayoutTimes:
    """What one launch looked like, in seconds after ``start``."""

    first_paint_s: float | None = None  # the first capture with any text
    first_full_s: float | None = None  # the first full frame (see is_full)
    final_layout_s: float | None = None  # from then on the layout never changed
    reflows: int = 0  # layout changes after the first full frame
    answered_s: float | None = None  # the key pressed at the first paint answered (see below)
    seen: list[tuple[float, Layout, str]] = field(default_factory=list)  # each layout, first seen

    @property
    def steady(self) -> bool:
        """Whether the first full frame was already the final layout."""
        return self.first_full_s is not None and self.reflows == 0


def final_layout_s(capture: Callable[[], str], start: float, seconds: float = 5.0,
                   every: float = 0.02, press: Callable[[], object] | None = None,
                   answer: str = "") -> LayoutTimes:
    """Capture the pane with ``capture()`` every ``every`` s until ``seconds`` after ``start``
    (a ``time.monotonic()`` taken at launch) and time its layouts (see LayoutTimes).

    ``press``: called once, at the first paint (a key typed as soon as something shows); the
    first capture after it that holds ``answer`` is when the key was answered."""
    times = LayoutTimes()
    last: Layout | None = None
    while (now := time.monotonic() - start) < seconds:
        screen = capture()
        if times.first_paint_s is None and screen.strip():
            times.first_paint_s = now
            if press is not None:
                press()
        elif press is not None and times.answered_s is None and answer and answer in screen:
            times.answered_s = now
        layout = layout_of(screen)
        if layout != last:
            if times.first_full_s is not None:
                times.reflows += 1
            if times.first_full_s is None and is_full(layout):
                times.first_full_s = now
            times.seen.append((now, layout, screen))
            times.final_layout_s = now if is_full(layout) else None
            last = layout
        time.sleep(max(0.0, every - (time.monotonic() - start - now)))
    return times
