"""The simulator's virtual clock.

Virtual time advances only when somebody waits on it, by exactly the amount waited, so two runs
with the same seed sample the same instants and print the same numbers. Each wait also sleeps
until the matching real-time deadline (start + virtual / speed), so at speed 1 the schedule is
real time, drift-free, and at speed N it runs N times faster.
"""

from __future__ import annotations

import threading
import time

from gputop.backends.base import Clock


class SimClock(Clock):
    def __init__(self, speed: float = 1.0, epoch: float | None = None) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self.epoch = time.time() if epoch is None else epoch
        self._real0 = time.monotonic()
        self._virtual = 0.0
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        return self._virtual

    def wall(self) -> float:
        return self.epoch + self._virtual

    def sleep(self, seconds: float) -> None:
        self.wait(threading.Event(), seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        target = self._virtual + max(0.0, seconds)
        deadline = self._real0 + target / self.speed
        interrupted = event.wait(max(0.0, deadline - time.monotonic()))
        reached = target
        if interrupted:  # woken early: advance only as far as real time did
            reached = min(target, (time.monotonic() - self._real0) * self.speed)
        with self._lock:
            self._virtual = max(self._virtual, reached)
        return interrupted
