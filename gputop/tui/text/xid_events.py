"""The events screen's text (`x`): the explained Xid events, newest first, importable without
Textual."""

from __future__ import annotations

from collections.abc import Sequence

from gputop.analysis.xid import ExplainedXid, catalog
from gputop.core.formatting import duration

SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}


def event_lines(events: Sequence[ExplainedXid], now: float) -> list[tuple[str, str]]:
    """(text, style) lines: per event its age, GPU, code and name, then whom it hit and what to
    do; a line saying none were seen where the list is empty."""
    if not events:
        return [("No Xid error seen since gputop started.", "dim")]
    out: list[tuple[str, str]] = []
    for e in events:
        info = e.info
        out.append((f"{duration(now - e.time):>7} ago  GPU {e.device}  Xid {info.code}  "
                    f"{info.name}", SEVERITY_STYLE.get(info.severity, "")))
        out.append((f"             hit: {e.whom()}", ""))
        out.append((f"             do:  {info.action}", "bold"))
        out.append((f"             {info.meaning}", "dim"))
    return out


def source_line() -> str:
    cat = catalog()
    return f"Decoded with NVIDIA's Xid catalog ({cat.driver}): {cat.url}"
