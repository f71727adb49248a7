"""Which analyses run on every tick. The hints module plugs in here."""

from __future__ import annotations

from collections.abc import Sequence

from gputop.core.model import Hint, Snapshot
from gputop.sampler import Analyzer


def default_analyzer() -> Analyzer:
    """Hints for the newest snapshot. Cost is bounded: hints read only a recent window, and the
    idle runs, which may be older than it, are folded in one sample at a time."""
    from gputop.analysis import hints

    runs = hints.IdleRuns()

    def analyze(window: Sequence[Snapshot]) -> list[Hint]:
        if window:
            runs.add(window[-1])
        return hints.analyze(window, runs)

    return analyze
