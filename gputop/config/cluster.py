"""The cluster view's config: what `gputop cluster` hands the live screen (`gputop.tui.cluster`)."""

from __future__ import annotations

from dataclasses import dataclass

from gputop.config.options import DEFAULT_INTERVAL_S


@dataclass(frozen=True)
class ClusterViewConfig:
    """How often the screen redraws and in which theme (None: the default)."""

    interval: float = DEFAULT_INTERVAL_S
    theme: str | None = None
