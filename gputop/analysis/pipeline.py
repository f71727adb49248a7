"""Which analyses run on every tick. The hints module plugs in here."""

from __future__ import annotations

from collections.abc import Sequence

from gputop.model import Hint, Snapshot
from gputop.sampler import Analyzer


def default_analyzer() -> Analyzer:
    def analyze(history: Sequence[Snapshot]) -> list[Hint]:
        return []

    return analyze
