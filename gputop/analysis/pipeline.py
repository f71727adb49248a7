"""Which analyses run on every tick. The hints module plugs in here."""

from __future__ import annotations

from gputop.core.model import Hint
from gputop.history import History
from gputop.sampler import Analyzer


def default_analyzer() -> Analyzer:
    """Hints for the newest snapshot. Cost is bounded: hints read only the history's window, and
    the idle runs and the Xid events, which may be older than it, are folded in one sample at a
    time."""
    from gputop.analysis import hints
    from gputop.analysis.xid import XidLog

    runs = hints.IdleRuns()
    xids = XidLog()  # each Xid explained once, as it comes, for the xid hint

    def analyze(history: History) -> list[Hint]:
        latest = history.latest
        if latest is not None:
            runs.add(latest)
            xids.add(latest)
        return hints.analyze_history(history, runs, xids)

    return analyze
