"""The sampler: runs a backend off the consumer's thread on a drift-free schedule.

Tick k is due at start + k * interval on the backend's clock (the simulator's may run faster
than real time). A tick that is already late when the previous one finishes is skipped, never
bunched, so a slow backend lowers the rate instead of bursting afterwards.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from gputop.backends.base import Backend
from gputop.core import budget
from gputop.core.model import Hint, Snapshot
from gputop.history import History

# Reads the history (the sample just taken its newest) and returns the hints for that sample.
Analyzer = Callable[[History], Sequence[Hint]]
# Folds each sample into a running account and returns it with the account's figures on it
# (gputop.analysis.waste.WasteLedger.annotate), before the history and the analyses see it.
Annotator = Callable[[Snapshot], Snapshot]
Listener = Callable[[Snapshot], None]
ErrorListener = Callable[[BaseException], None]


def next_tick(start: float, interval: float, now: float, k: int) -> tuple[int, float]:
    """Return the first tick index > k whose due time is not in the past, and that time."""
    k += 1
    due = start + k * interval
    if due < now:
        k = int((now - start) // interval) + 1
        due = start + k * interval
    return k, due


class Sampler:
    def __init__(
        self,
        backend: Backend,
        interval: float = 1.0,
        devices: Sequence[int] | None = None,
        history: History | None = None,
        analyze: Analyzer | None = None,
        annotate: Annotator | None = None,
    ) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.backend = backend
        self.interval = interval
        self.devices = list(devices) if devices is not None else None
        self.history = history if history is not None else History(interval=interval)
        self.analyze = analyze
        self.annotate = annotate
        self.latest: Snapshot | None = None
        self.last_error: BaseException | None = None
        self.skipped_ticks = 0
        self._listeners: list[Listener] = []
        self._error_listeners: list[ErrorListener] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._paused = threading.Event()
        self._wake = threading.Event()
        self._wants: dict[str, budget.Wants | None] = {}
        self.wants: budget.Wants | None = budget.EVERYTHING
        self.latest_wants: budget.Wants | None = budget.EVERYTHING

    # -- the call budget
    def want(self, consumer: str, wants: budget.Wants | None) -> None:
        """``consumer`` reads these attributes (gputop.core.budget) from each tick from now on,
        replacing what it declared before. While no consumer has declared anything, every
        tick reads everything."""
        self._wants[consumer] = wants
        self.wants = budget.merge(self._wants.values())

    def unwant(self, consumer: str) -> None:
        """``consumer`` stopped reading (a screen closed, a recording ended)."""
        self._wants.pop(consumer, None)
        self.wants = budget.merge(self._wants.values())

    # -- consumers
    def subscribe(self, listener: Listener, on_error: ErrorListener | None = None) -> None:
        """``listener`` is called on the sampler's thread: hand the snapshot over, don't work."""
        self._listeners.append(listener)
        if on_error is not None:
            self._error_listeners.append(on_error)

    def set_interval(self, interval: float) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.interval = interval
        self.history.set_interval(interval)
        self._wake.set()

    def pause(self, paused: bool = True) -> None:
        if paused:
            self._paused.set()
        else:
            self._paused.clear()

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    # -- one tick, on whatever thread calls it
    def tick(self) -> Snapshot | None:
        try:
            wants = self.wants
            snap = (self.backend.sample(self.devices) if wants is budget.EVERYTHING
                    else self.backend.sample(self.devices, wants=wants))
        except Exception as exc:  # a backend failure must never kill the sampler
            self.last_error = exc
            for on_error in self._error_listeners:
                on_error(exc)
            return None
        self.last_error = None
        if self.annotate is not None:
            snap = self.annotate(snap)
        self.history.append(snap)
        if self.analyze is not None:
            # A backend's own hints (npu-smi's health) come first, the analyses' after them.
            snap = snap.with_hints(tuple(snap.hints) + tuple(self.analyze(self.history)))
        self.latest = snap
        self.latest_wants = wants  # what that tick read: a listener may check it covers its own
        for listener in self._listeners:
            listener(snap)
        return snap

    def run_for(self, seconds: float) -> Snapshot | None:
        """Sample on schedule in the caller's thread for ``seconds`` of backend time."""
        clock = self.backend.clock
        start = clock.monotonic()
        k = 0
        self.tick()
        while True:
            k, due = next_tick(start, self.interval, clock.monotonic(), k)
            if due - start > seconds + 1e-9:
                break
            clock.wait(self._stop, due - clock.monotonic())
            self.tick()
        return self.latest

    # -- background thread
    def start(self, first: Snapshot | None = None) -> None:
        """Sample on a background thread; ``first``: a sample the consumer already took just
        now (the dashboard's first frame), kept as this schedule's tick 0 instead of reading
        the device again."""
        if self._thread is not None:
            return
        if first is not None:
            if self.annotate is not None:
                first = self.annotate(first)
            self.history.append(first)
            self.latest = first
        self._thread = threading.Thread(target=self._run, args=(first is not None,),
                                        name="gputop-sampler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self, first_taken: bool = False) -> None:
        clock = self.backend.clock
        start = clock.monotonic()
        interval = self.interval
        k = 0
        while not self._stop.is_set():
            if first_taken:
                first_taken = False
            elif not self._paused.is_set():
                self.tick()
            now = clock.monotonic()
            if self.interval != interval:  # re-anchor the schedule on an interval change
                interval, start, k = self.interval, now, 0
            k2, due = next_tick(start, interval, now, k)
            self.skipped_ticks += k2 - k - 1
            k = k2
            self._wake.clear()
            clock.wait(self._wake, due - clock.monotonic())
