"""The range a report covers: ``--since`` and ``--until`` as a person writes them.

A time is a Unix time (``1763769600``), an ISO 8601 time (``2026-11-26T15:00``; local time
unless it names its zone, ``Z`` for UTC), or a duration back from the end (``2h``, ``90m``,
``1d12h``, ``2w``): the end is the newest sample of a recording, or now for a Prometheus
server (``--until`` moves it).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

from gputop.core.errors import UsageError

_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?[smhdw])+")
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
WORDS = "a Unix time, an ISO time such as 2026-11-26T15:00, or a duration back such as 2h"


@dataclass(frozen=True)
class TimeSpec:
    """One of ``--since``/``--until`` as given: a time (``at``), or a duration before the end
    (``back_s``)."""

    text: str
    at: float | None = None
    back_s: float | None = None

    def resolve(self, end: float | None) -> float:
        """Return the time this names, a duration counted back from ``end`` (which it needs)."""
        if self.at is not None:
            return self.at
        assert self.back_s is not None and end is not None, "a duration needs an end: needs_end"
        return end - self.back_s


def parse_time(text: str, option: str) -> TimeSpec:
    """Read one time of ``option`` (``--since``); raise UsageError saying what is accepted."""
    word = text.strip()
    if _DURATION.fullmatch(word):
        return TimeSpec(text, back_s=sum(float(n) * _UNIT_S[u] for n, u in _PART.findall(word)))
    at: float | None
    try:
        at = float(word)
    except ValueError:
        at = _iso(word)
    if at is None or not math.isfinite(at) or at < 0:
        raise UsageError(f"{option} {text!r}: expected {WORDS}")
    return TimeSpec(text, at=at)


def _iso(word: str) -> float | None:
    if word.endswith(("Z", "z")):  # fromisoformat takes it from Python 3.11 only
        word = word[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(word).timestamp()  # naive: local time
    except (ValueError, OverflowError, OSError):
        return None


def needs_end(*specs: TimeSpec | None) -> bool:
    """Whether any of ``specs`` counts back from the end (which must then be found first)."""
    return any(s is not None and s.back_s is not None for s in specs)


def resolve(since: TimeSpec | None, until: TimeSpec | None,
            end: float | None) -> tuple[float | None, float | None]:
    """Return the range (start, stop) the specs name, None where open. ``--until`` counts back
    from ``end``; ``--since`` from ``--until`` where given, else from ``end`` (None only where
    no spec counts back: :func:`needs_end`). Raise UsageError for a range that ends before it
    starts."""
    stop = None if until is None else until.resolve(end)
    start = None if since is None else since.resolve(stop if stop is not None else end)
    if since is not None and until is not None and start is not None and stop is not None \
            and stop <= start:
        raise UsageError(f"--until {until.text} is not after --since {since.text}")
    return start, stop
