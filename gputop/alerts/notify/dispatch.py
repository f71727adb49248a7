"""Delivery that never blocks its caller: one queue and one thread per channel.

`Dispatcher.submit` only appends the alert to each channel's queue and returns: the sampler and
the UI never wait on a network, a command or a terminal. Each channel's thread sends what its
queue holds, in order, and so a dead channel (a webhook that never answers) delays nothing but
itself. Its policy (`DeliveryPolicy`) bounds everything:

- the queue holds at most ``queue`` alerts: when full the oldest is dropped, counted, and
  reported by the channel's thread (an alert fired an hour ago matters less than the latest);
- each attempt is bounded by ``timeout_s`` (the notifier keeps to it);
- a failed attempt is retried up to ``retries`` times, after an exponential back-off
  (``backoff_s``, doubled each time, at most ``backoff_max_s``) with jitter: each wait is drawn
  from its second half, so that many nodes that lost the same receiver do not retry in step;
- an alert that failed every attempt is given up, and the next one is tried: the channel heals
  by itself once its receiver does, and what was submitted after is not lost.

Every failure goes to the ``on_event`` callback (a log, the dashboard's notice) as a
`DeliveryEvent`, and is kept per channel (`ChannelStatus`: counts, the last error and when) for
a UI to show. No message holds a secret: a channel is named by its name and its ``label``,
which `channels` builds with the webhook URL redacted, and a notifier's `DeliveryError` is
free of its secrets by contract.

`Dispatcher.close` lets each channel deliver what it holds until a deadline, then abandons the
rest (counted as lost), stops what it can (a command in flight is killed) and returns: it never
waits past its deadline for a channel that hangs (the threads are daemons).
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from gputop.alerts.model import Alert, DeliveryError, Notifier
from gputop.core.userfile import one_line

EventKind = Literal["delivered", "retry", "gave-up", "dropped", "lost"]
_STOP_GRACE_S = 0.2  # after close's deadline, for a stopped command's thread to notice


@dataclass(frozen=True)
class DeliveryPolicy:
    """How one channel delivers: see the module's docstring."""

    timeout_s: float = 10.0
    retries: int = 3
    backoff_s: float = 1.0
    backoff_max_s: float = 60.0
    queue: int = 100


@dataclass(frozen=True)
class Channel:
    """A notifier with its policy. ``label`` says what it is in messages, free of secrets
    (``webhook https://hooks.slack.com/… (slack)``); ``stop`` kills a send in flight at
    close's deadline (a command's process group), where a notifier can."""

    notifier: Notifier
    policy: DeliveryPolicy = DeliveryPolicy()
    label: str = ""
    stop: Callable[[], None] | None = None


@dataclass(frozen=True)
class DeliveryEvent:
    """What happened on a channel: an alert delivered, an attempt failed and retried, an alert
    given up, dropped from a full queue, or lost at close. ``message`` is one line."""

    channel: str
    kind: EventKind
    message: str
    key: str | None = None  # the alert's key; None for counts (drops, losses)


@dataclass(frozen=True)
class ChannelStatus:
    """One channel's counts and its last error, for a UI."""

    name: str
    label: str
    queued: int
    delivered: int
    failed_attempts: int
    gave_up: int
    dropped: int
    lost: int
    last_error: str | None
    last_error_at: float | None  # epoch seconds
    last_delivered_at: float | None


def backoff_delay(retry: int, policy: DeliveryPolicy, rand: float) -> float:
    """Return the wait before retry number ``retry`` (1 for the first): ``backoff_s`` doubled
    per retry, capped at ``backoff_max_s``, then placed by ``rand`` (0 to 1) in its second half."""
    full = min(policy.backoff_max_s, policy.backoff_s * 2.0 ** (retry - 1))
    return full * (0.5 + 0.5 * rand)


@dataclass
class _Counts:
    delivered: int = 0
    failed_attempts: int = 0
    gave_up: int = 0
    dropped: int = 0
    dropped_unreported: int = 0
    lost: int = 0
    last_error: str | None = None
    last_error_at: float | None = None
    last_delivered_at: float | None = None


@dataclass
class _Lane:
    channel: Channel
    queue: deque[Alert] = field(default_factory=deque)
    cond: threading.Condition = field(default_factory=threading.Condition)
    counts: _Counts = field(default_factory=_Counts)
    closing: bool = False
    deadline: float | None = None  # monotonic; set by close
    abort: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    @property
    def name(self) -> str:
        return self.channel.notifier.name

    def shown(self) -> str:
        return f"{self.name} ({self.channel.label})" if self.channel.label else self.name


class Dispatcher:
    """Delivers alerts to channels, each on its own thread; see the module's docstring."""

    def __init__(self, channels: Iterable[Channel],
                 on_event: Callable[[DeliveryEvent], None] | None = None, *,
                 clock: Callable[[], float] = time.time,
                 rand: Callable[[], float] = random.random) -> None:
        self._lanes: dict[str, _Lane] = {}
        for channel in channels:
            name = channel.notifier.name
            if name in self._lanes:
                raise ValueError(f"two channels named {name!r}")
            self._lanes[name] = _Lane(channel)
        self._on_event = on_event
        self._clock = clock
        self._rand = rand
        self._closed = False
        for lane in self._lanes.values():
            lane.thread = threading.Thread(target=self._run, args=(lane,), daemon=True,
                                           name=f"gputop-alerts-{lane.name}")
            lane.thread.start()

    @property
    def channels(self) -> tuple[str, ...]:
        """Return the channels' names, in the order given."""
        return tuple(self._lanes)

    def submit(self, alert: Alert, to: Iterable[str] | None = None) -> None:
        """Queue ``alert`` for the channels named in ``to`` (one name or several; None: every
        channel) and return at once. A name with no channel is skipped (the rules' check names
        it at start)."""
        if self._closed:
            return
        names = self._lanes if to is None else ((to,) if isinstance(to, str) else to)
        for name in names:
            lane = self._lanes.get(name)
            if lane is None:
                continue
            with lane.cond:
                if lane.closing:
                    continue
                if len(lane.queue) >= lane.channel.policy.queue:
                    lane.queue.popleft()
                    lane.counts.dropped += 1
                    lane.counts.dropped_unreported += 1
                lane.queue.append(alert)
                lane.cond.notify()

    def status(self) -> tuple[ChannelStatus, ...]:
        """Return every channel's counts and last error."""
        out = []
        for lane in self._lanes.values():
            with lane.cond:
                c = lane.counts
                out.append(ChannelStatus(
                    name=lane.name, label=lane.channel.label, queued=len(lane.queue),
                    delivered=c.delivered, failed_attempts=c.failed_attempts,
                    gave_up=c.gave_up, dropped=c.dropped, lost=c.lost, last_error=c.last_error,
                    last_error_at=c.last_error_at, last_delivered_at=c.last_delivered_at))
        return tuple(out)

    def close(self, deadline_s: float) -> bool:
        """Deliver what the queues hold for at most ``deadline_s`` seconds, then give up on the
        rest (reported as lost) and return; True if every channel finished in time."""
        self._closed = True
        end = time.monotonic() + max(0.0, deadline_s)
        for lane in self._lanes.values():
            with lane.cond:
                lane.closing = True
                lane.deadline = end
                lane.cond.notify_all()
        for lane in self._lanes.values():
            assert lane.thread is not None
            lane.thread.join(max(0.0, end - time.monotonic()))
        late = [lane for lane in self._lanes.values()
                if lane.thread is not None and lane.thread.is_alive()]
        for lane in late:
            lane.abort.set()
            with lane.cond:
                lane.cond.notify_all()
            if lane.channel.stop is not None:
                try:
                    lane.channel.stop()
                except Exception:  # a failing stop must not stop the others
                    pass
        for lane in late:
            assert lane.thread is not None
            lane.thread.join(_STOP_GRACE_S / max(1, len(late)))
        for lane in self._lanes.values():
            with lane.cond:
                left = len(lane.queue)
                lane.queue.clear()
                lane.counts.lost += left
            if left:
                self._emit(lane, "lost", f"{left} alert(s) not delivered by the close deadline")
        return not late

    # ------------------------------------------------------------------ the channel's thread

    def _run(self, lane: _Lane) -> None:
        while True:
            with lane.cond:
                while not lane.queue and not lane.closing:
                    lane.cond.wait()
                if not lane.queue or lane.abort.is_set():
                    return
                alert = lane.queue.popleft()
                drops, lane.counts.dropped_unreported = lane.counts.dropped_unreported, 0
            if drops:
                self._emit(lane, "dropped",
                           f"{drops} older alert(s) dropped: the queue of "
                           f"{lane.channel.policy.queue} was full")
            if not self._deliver(lane, alert):
                return

    def _deliver(self, lane: _Lane, alert: Alert) -> bool:
        """Send ``alert`` with retries; return False when close's deadline has passed."""
        policy = lane.channel.policy
        attempts = policy.retries + 1
        what = f"{alert.rule} {alert.state}"
        for attempt in range(1, attempts + 1):
            timeout = policy.timeout_s
            if lane.deadline is not None:
                timeout = min(timeout, lane.deadline - time.monotonic())
                if timeout <= 0 or lane.abort.is_set():
                    self._lose(lane, alert)
                    return False
            try:
                lane.channel.notifier.send(alert, timeout)
            except DeliveryError as exc:
                why = one_line(str(exc)) or "failed"
            except Exception as exc:  # a notifier's bug must not end its lane
                why = f"unexpected {type(exc).__name__} (a bug in gputop)"
            else:
                with lane.cond:
                    lane.counts.delivered += 1
                    lane.counts.last_delivered_at = self._clock()
                self._emit(lane, "delivered", f"{what} delivered", alert.key)
                return True
            with lane.cond:
                lane.counts.failed_attempts += 1
                lane.counts.last_error = why
                lane.counts.last_error_at = self._clock()
            if attempt == attempts:
                with lane.cond:
                    lane.counts.gave_up += 1
                self._emit(lane, "gave-up",
                           f"{what} not delivered after {attempts} attempt(s): {why}", alert.key)
                return True
            delay = backoff_delay(attempt, policy, self._rand())
            if lane.deadline is not None:
                delay = min(delay, max(0.0, lane.deadline - time.monotonic()))
            self._emit(lane, "retry", f"{what}: attempt {attempt} of {attempts} failed: {why}; "
                                      f"retrying in {delay:.1f} s", alert.key)
            if lane.abort.wait(delay):
                self._lose(lane, alert)
                return False
        return True  # not reached: the last attempt returns above

    def _lose(self, lane: _Lane, alert: Alert) -> None:
        with lane.cond:
            lane.counts.lost += 1
        self._emit(lane, "lost", f"{alert.rule} {alert.state} not delivered by the close "
                                 "deadline", alert.key)

    def _emit(self, lane: _Lane, kind: EventKind, text: str, key: str | None = None) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(DeliveryEvent(lane.name, kind,
                                         f"alert channel {lane.shown()}: {text}", key))
        except Exception:  # a broken logger must not end the channel's thread
            pass
