"""The dashboard's screens, and the two things the dashboard asks of a screen over it."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from gputop.core.model import Snapshot


@runtime_checkable
class TakesSnapshots(Protocol):
    """Declare a screen that shows each sample as it comes (the saturation panel, a process's
    view): the dashboard hands it every snapshot, also while a dialog covers it.

    Runtime-checkable because a Textual screen cannot name a Protocol as a base (their
    metaclasses differ): the dashboard picks these out of its screen stack with isinstance."""

    def update(self, snapshot: Snapshot) -> None:
        """Show ``snapshot``, the latest sample; called on the app's thread."""


class HidesDashboardKeys:
    """Mark a screen that covers the dashboard's GPUs and process table: their keys (filter,
    sort, select a GPU, …) do nothing there, so the dashboard takes them out of its footer."""
