"""Which analyses run on every tick. The hints module plugs in here."""

from __future__ import annotations

from collections.abc import Sequence

from gputop.core.model import Hint, Snapshot
from gputop.sampler import Analyzer


def default_analyzer() -> Analyzer:
    """Hints for the newest snapshot. Cost is bounded: hints read only a recent window."""
    from gputop.analysis import hints

    def analyze(history: Sequence[Snapshot]) -> list[Hint]:
        return hints.analyze(history)

    return analyze
