"""One node's state machine: what its ssh session said, and what to do next. No I/O here.

The transport (``transport.py``) spawns processes and moves bytes; it tells a :class:`Node` what
happened (lines, stderr, exit, the clock) and asks it what to run and when. Consumers read
immutable :class:`NodeStatus` values.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gputop.cluster import remote, states
from gputop.cluster.agentless import NpuSmiStream, NvidiaSmiStream
from gputop.cluster.hosts import HostSpec
from gputop.cluster.lines import Oversize
from gputop.cluster.protocol import AgentDecoder, Checked, Hello, Problem, build_snapshot
from gputop.cluster.summary import NodeSummary, summarize_document, summarize_snapshot
from gputop.core.model import Snapshot

STDERR_KEEP = 16 * 1024  # the tail of ssh's stderr, for the reason text


@dataclass(frozen=True, eq=False)
class NodeStatus:
    """What a consumer sees of a node, at one moment.

    ``data`` is the latest snapshot, or the checked gputop/1 document it will be built from on
    first use of ``snapshot`` (most refreshes need only ``summary``), or the summary alone where
    the transport fetched only that (Prometheus, for a node nobody opened)."""

    host: str
    state: str
    mode: str
    reason: str
    data: Snapshot | dict | NodeSummary | None = field(default=None, repr=False)
    received: float | None = None  # monotonic time the snapshot arrived (viewer's clock)
    hello: Hello | None = None
    rejected: int = 0  # lines discarded as invalid or oversized, ever
    attempts: int = 0
    seq: int = 0  # bumps on every change: update a table row only when it moved
    done: bool = False  # no further attempts will be made (once mode)

    def age(self, now: float) -> float | None:
        return None if self.received is None else max(0.0, now - self.received)

    @property
    def snapshot(self) -> Snapshot | None:
        data = self.data
        if data is None or isinstance(data, Snapshot):
            return data
        if isinstance(data, NodeSummary):
            return None
        cached = self.__dict__.get("_snapshot")
        if cached is None:
            cached = build_snapshot(data)
            object.__setattr__(self, "_snapshot", cached)  # a cache, not a change of value
        return cached

    @property
    def summary(self) -> NodeSummary | None:
        data = self.data
        if data is None or isinstance(data, NodeSummary):
            return data
        cached = self.__dict__.get("_summary")
        if cached is None:
            cached = summarize_snapshot(data) if isinstance(data, Snapshot) else \
                summarize_document(data)
            object.__setattr__(self, "_summary", cached)
        return cached


@dataclass
class Policy:
    interval: float = 1.0
    connect_timeout: float = remote.DEFAULT_CONNECT_TIMEOUT_S
    # Time from ssh's start to the first line of a working remote: connect, auth, remote start.
    answer_timeout: float | None = None
    stale_after: float | None = None
    restart_after: float | None = None
    backoff_initial: float = 1.0
    backoff_max: float = 60.0
    reconnect: bool = True
    fallback: bool = True
    override_command: str | None = None

    def __post_init__(self) -> None:
        if self.answer_timeout is None:
            self.answer_timeout = self.connect_timeout + 20.0
        if self.stale_after is None:
            self.stale_after = max(3.0 * self.interval, 5.0)
        if self.restart_after is None:
            self.restart_after = max(10.0 * self.interval, 60.0)


class Node:
    def __init__(self, spec: HostSpec, policy: Policy, rng: random.Random | None = None) -> None:
        self.spec = spec
        self.policy = policy
        self.rng = rng or random.Random(hash(spec.name))
        self.mode = remote.MODE_AGENT
        self.state = states.CONNECTING
        self.reason = "waiting to connect"
        self.data: Snapshot | dict | None = None  # see NodeStatus.data
        self.received: float | None = None
        self.hello: Hello | None = None
        self.rejected = 0
        self.attempts = 0
        self.seq = 0
        self.next_attempt = 0.0
        self.failures = 0  # consecutive sessions that delivered nothing
        self.done = False  # no more attempts (once mode, or stopped)
        # per-session
        self.running = False
        self.started = 0.0
        self.answered = False
        self.session_data = False
        self.stderr = bytearray()
        self.stdout_tail = bytearray()  # for nvidia-smi's errors, which it prints on stdout
        self._decoder: AgentDecoder | NvidiaSmiStream | NpuSmiStream | None = None
        self._basic_fields = False
        self._fatal: Problem | None = None
        self.kill_reason: str | None = None  # the viewer ended the session, and why
        self.last_line = 0.0

    # ------------------------------------------------------------------ what to run
    def command(self) -> str:
        if self.mode == remote.MODE_NVIDIA_SMI and self._basic_fields:
            return remote.nvidia_smi_command(self.policy.interval, remote.NVIDIA_SMI_BASIC_FIELDS)
        return remote.remote_command(self.spec, self.mode, self.policy.interval,
                                     self.policy.override_command)

    def session_started(self, now: float) -> None:
        self.running = True
        self.started = now
        self.last_line = now
        self.answered = False
        self.session_data = False
        self.attempts += 1
        self.stderr.clear()
        self.stdout_tail.clear()
        self._fatal = None
        self.kill_reason = None
        if self.mode == remote.MODE_AGENT:
            self._decoder = AgentDecoder()
        elif self.mode == remote.MODE_NVIDIA_SMI:
            fields = remote.NVIDIA_SMI_BASIC_FIELDS if self._basic_fields else \
                remote.NVIDIA_SMI_FIELDS
            self._decoder = NvidiaSmiStream(self.spec.name, fields)
        else:
            self._decoder = NpuSmiStream(self.spec.name, remote.NPU_SMI_END)
        if self.state not in (states.OK, states.STALE) or self.data is None:
            self._set(states.CONNECTING, f"connecting ({self.mode})" if self.attempts == 1 else
                      f"connecting ({self.mode}, attempt {self.attempts})")

    # ------------------------------------------------------------------ what happened
    def on_stderr(self, data: bytes) -> None:
        self.stderr += data
        if len(self.stderr) > STDERR_KEEP:
            del self.stderr[:-STDERR_KEEP]

    def on_line(self, line: bytes | Oversize, now: float) -> bool:
        """Feed one stdout line. Returns False when the session should be dropped."""
        self.last_line = now
        if self.mode != remote.MODE_AGENT and isinstance(line, bytes):
            self.stdout_tail += line[:512] + b"\n"
            if len(self.stdout_tail) > 2048:
                del self.stdout_tail[:-2048]
        decoder = self._decoder
        if decoder is None:
            return False
        events: Sequence[Hello | Checked | Snapshot | Problem | None]
        if isinstance(decoder, AgentDecoder):
            events = [decoder.feed(line)]
        else:
            events = decoder.feed(line)
        for event in events:
            if event is None:
                continue
            if isinstance(event, Hello):
                self.answered = True
                self.hello = event
                if self.data is None:
                    self._set(states.CONNECTING, "agent answered; waiting for the first sample")
            elif isinstance(event, Checked):
                self._snapshot(event.doc, now)
            elif isinstance(event, Snapshot):
                self._snapshot(event, now)
            elif isinstance(event, Problem):
                self.rejected += 1
                if event.fatal:
                    self._fatal = event
                    self._set(event.state, event.reason)
                    return False
                self._set(event.state, event.reason)
        return True

    def _snapshot(self, snap: Snapshot | dict, now: float) -> None:
        self.answered = True
        self.session_data = True
        self.failures = 0
        self.data = snap
        self.received = now
        reason = ""
        if self.mode != remote.MODE_AGENT:
            reason = f"gputop not found on the node; agentless via {self.mode}"
        self.state = states.OK
        self.reason = reason
        self.seq += 1

    def on_exit(self, returncode: int | None, now: float) -> None:
        """The session ended. Decide the state and when (and how) to try again."""
        self.running = False
        if isinstance(self._decoder, NvidiaSmiStream):
            for event in self._decoder.flush():
                self._snapshot(event, now)
        self._decoder = None
        err = self.stderr.decode("utf-8", "replace")
        out = self.stdout_tail.decode("utf-8", "replace")
        if self._fatal is not None:
            self._schedule(now, stubborn=True)
            return
        if self.kill_reason is not None:
            self._set(states.UNREACHABLE, self.kill_reason)
            self._schedule(now, stubborn=False)
            return
        if self.mode == remote.MODE_NVIDIA_SMI and not self._basic_fields and \
                "is not a valid field" in out + err:
            self._basic_fields = True  # an older driver: ask for the fields every driver has
            self._retry_now(now, "nvidia-smi is older: retrying with fewer fields")
            return
        verdict = states.classify_exit(returncode, err, had_data=self.session_data)
        if verdict.state == states.NO_GPUTOP and self.policy.fallback:
            nxt = {remote.MODE_AGENT: remote.MODE_NVIDIA_SMI,
                   remote.MODE_NVIDIA_SMI: remote.MODE_NPU_SMI}.get(self.mode)
            if nxt is not None:
                was = self.mode
                self.mode = nxt
                self._retry_now(now, f"{'gputop' if was == remote.MODE_AGENT else was} "
                                f"not found ({verdict.reason}); trying {nxt}")
                return
            self.mode = remote.MODE_AGENT
            self._set(states.NO_GPUTOP, "gputop is not installed on the node and neither "
                      "nvidia-smi nor npu-smi was found (agentless fallback tried)")
            self._schedule(now, stubborn=True)
            return
        if verdict.state == states.FAILED and self.mode != remote.MODE_AGENT and \
                not self.session_data:
            reason = f"{self.mode} failed: {states.last_lines(out + err) or verdict.reason}"
            self._set(states.FAILED, reason)
        else:
            self._set(verdict.state, verdict.reason)
        self._schedule(now, stubborn=verdict.state in states.STUBBORN)

    def on_stale(self, now: float) -> None:
        age = now - (self.received or self.started)
        self._set(states.STALE, f"no data for {age:.0f} s")

    def flush_idle(self, now: float) -> None:
        """nvidia-smi rows without a count wait for the next group; release them when it idles."""
        if isinstance(self._decoder, NvidiaSmiStream) and now - self.last_line > 0.3:
            for snap in self._decoder.flush():
                self._snapshot(snap, now)

    # ------------------------------------------------------------------ scheduling
    def _retry_now(self, now: float, reason: str) -> None:
        self._set(states.CONNECTING, reason)
        self.next_attempt = now

    def _schedule(self, now: float, stubborn: bool) -> None:
        if not self.session_data:
            self.failures += 1
        if not self.policy.reconnect:
            self.done = True
            self.seq += 1
            return
        if stubborn:
            delay = self.policy.backoff_max
        else:
            delay = min(self.policy.backoff_max,
                        self.policy.backoff_initial * 2 ** max(0, self.failures - 1))
        delay *= 0.8 + 0.4 * self.rng.random()  # jitter: nodes that fell together don't retry together
        self.next_attempt = now + delay
        if self.state not in (states.OK, states.STALE, states.CONNECTING):
            self.reason = f"{self.reason} (retry in {delay:.0f} s)"
            self.seq += 1

    def _set(self, state: str, reason: str) -> None:
        if state != self.state or reason != self.reason:
            self.state = state
            self.reason = reason
            self.seq += 1

    def status(self) -> NodeStatus:
        return NodeStatus(
            host=self.spec.name, state=self.state, mode=self.mode, reason=self.reason,
            data=self.data, received=self.received, hello=self.hello,
            rejected=self.rejected, attempts=self.attempts, seq=self.seq, done=self.done,
        )


def wait_until(changed: threading.Condition, ready: Callable[[], bool], timeout: float) -> bool:
    """Block until ``ready()`` holds (checked under ``changed``, whose notifications wake the wait)
    or ``timeout`` passes. Re-checked at least every 0.5 s: readiness can also come from time
    passing (a node going stale), which no notification announces."""
    deadline = time.monotonic() + timeout
    with changed:
        while not ready():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            changed.wait(min(left, 0.5))
        return True
