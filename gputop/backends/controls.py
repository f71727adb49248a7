"""The replay controls: what a view drives a replayed log with (play, pause, step, seek, speed).

The replay backend's :class:`~gputop.backends.replay.backend.Player` implements them, and a
backend offers them as ``Backend.player`` (None for a live device). The dashboard's replay keys
and its header call nothing else, so a test may hand in any object that implements them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class ReplayControls(Protocol):
    """Declare where a replay is and what moves it; positions are seconds from its first sample."""

    @property
    def position(self) -> float:
        """Return the position shown now (0 … ``duration``)."""

    @property
    def duration(self) -> float:
        """Return the log's length: its last sample's position."""

    @property
    def speed(self) -> float:
        """Return how many seconds of log play in one second of real time."""

    @property
    def playing(self) -> bool:
        """Return True while the position moves on by itself."""

    @property
    def times(self) -> Sequence[float]:
        """Return every sample's position, in order (a header sizes its clock by them)."""

    def play(self) -> None:
        """Let the position move on by itself (from the start again when at the end)."""

    def pause(self) -> None:
        """Hold the position where it is."""

    def toggle(self) -> None:
        """Pause a playing replay, play a paused one."""

    def step(self, n: int = 1) -> None:
        """Pause and move ``n`` samples forward (negative: back)."""

    def set_speed(self, speed: float) -> None:
        """Play at ``speed``; raise ValueError unless it is positive."""

    def seek(self, seconds: float) -> None:
        """Go to ``seconds`` (clamped to the log); playing stays as it was."""

    def skip(self, seconds: float) -> None:
        """Move ``seconds`` forward (negative: back) from the position, clamped to the log."""
