"""Which analyses run on every tick. The hints module plugs in here."""

from __future__ import annotations

from collections.abc import Sequence

from gputop.core.model import Hint, Snapshot
from gputop.sampler import Analyzer


def default_analyzer() -> Analyzer:
    """Hints for the newest snapshot. Cost is bounded: hints read only a recent window, and the
    idle runs and the Xid events, which may be older than it, are folded in one sample at a
    time."""
    from gputop.analysis import hints
    from gputop.analysis.xid import XidLog

    runs = hints.IdleRuns()
    xids = XidLog()  # each Xid explained once, as it comes, for the xid hint

    def analyze(window: Sequence[Snapshot]) -> list[Hint]:
        if window:
            runs.add(window[-1])
            xids.add(window[-1])
        return hints.analyze(window, runs, xids)

    return analyze
