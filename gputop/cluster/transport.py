"""The transport: one long-lived system `ssh` per node, all read by one I/O thread.

Every session's stdout and stderr are non-blocking pipes in one selector, read in bounded
chunks: a slow, dead or lying node costs the others nothing, a 100 MB line costs no memory
(``lines.py``), and the viewer's thread never touches a pipe. Sessions open at most
``max_opening`` at a time (an ssh handshake is the expensive part, and a shared ProxyJump
bastion limits unauthenticated connections); the rest wait their turn as "connecting".
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from gputop.cluster import remote, states
from gputop.cluster.hosts import HostSpec
from gputop.cluster.lines import DEFAULT_MAX_LINE, LineSplitter
from gputop.cluster.node import Node, NodeStatus, Policy, wait_until

READ_CHUNK = 256 * 1024
DEFAULT_MAX_OPENING = 8
EXIT_GRACE_S = 2.0  # after EOF, how long a session may take to exit before it is killed
IDLE_TICK_S = 0.5
# Timeouts, staleness, reconnects: checked a few times a second, not on every line read (with
# 64 nodes the loop wakes about 64 times a second).
MAINTENANCE_S = 0.2


@dataclass
class _Session:
    node: Node
    proc: subprocess.Popen
    out: LineSplitter
    open_fds: set[int]
    eof_at: float | None = None
    killed: bool = False


class Cluster:
    """Watches many nodes. ``start()``, then read ``statuses()``; ``stop()`` ends every session.

    Implements :class:`gputop.cluster.source.ClusterSource`."""

    # A trouble of the transport as a whole, shown as one line (the Prometheus transport's
    # server being unreachable); each SSH session's trouble is its own node's reason.
    problem: str | None = None

    def __init__(
        self,
        specs: Sequence[HostSpec],
        policy: Policy | None = None,
        *,
        ssh_config: str | None = None,
        ssh: str = remote.SSH,
        max_opening: int = DEFAULT_MAX_OPENING,
        max_line: int = DEFAULT_MAX_LINE,
        on_change: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = policy or Policy()
        self.ssh_config = ssh_config
        self.ssh = ssh
        self.max_opening = max(1, max_opening)
        self.max_line = max_line
        self.on_change = on_change
        self.clock = clock
        self.nodes = [Node(spec, self.policy) for spec in specs]
        self._by_host = {n.spec.name: n for n in self.nodes}
        self._sessions: dict[int, _Session] = {}  # fd -> session
        self._live: dict[str, _Session] = {}  # host -> session
        self._statuses: dict[str, NodeStatus] = {n.spec.name: n.status() for n in self.nodes}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.version = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._requests: deque[Callable[[], None]] = deque()
        self._dirty: set[Node] = set()  # nodes touched since the last publish
        self._maintain = False  # a session ended: run maintenance now, not at its next tick
        self.spawn_errors = 0

    # ------------------------------------------------------------------ consumer side
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gputop-cluster-io",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 3.0) -> None:
        self._stop.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return  # still draining; it closes its sessions as it ends
            self._thread = None
        self._shutdown_all()

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def statuses(self) -> list[NodeStatus]:
        """Every node's status, in the order the hosts were given."""
        with self._lock:
            return [self._statuses[n.spec.name] for n in self.nodes]

    def status(self, host: str) -> NodeStatus:
        with self._lock:
            return self._statuses[host]

    def detail(self, hosts: Collection[str] = (), every: bool = False) -> None:
        """Do nothing: over SSH every node sends its samples whole, opened or not."""

    def wait(self, predicate: Callable[[list[NodeStatus]], bool], timeout: float) -> bool:
        """Block until ``predicate(statuses)`` holds or ``timeout`` passes."""
        return wait_until(
            self._changed, lambda: predicate([self._statuses[n.spec.name] for n in self.nodes]),
            timeout)

    @staticmethod
    def settled(statuses: Sequence[NodeStatus]) -> bool:
        """Once mode: every node has data, has said what is wrong with it, or has given up."""
        return all(s.done or s.state in (states.OK, states.PROTOCOL_ERROR, states.INCOMPATIBLE)
                   for s in statuses)

    # ------------------------------------------------------------------ the I/O thread
    def _request(self, fn: Callable[[], None]) -> None:
        self._requests.append(fn)
        self._wake()

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):
            pass

    def _run(self) -> None:
        next_maintenance = 0.0
        timeout = 0.0
        try:
            while not self._stop.is_set():
                now = self.clock()
                while self._requests:
                    with self._lock:
                        self._requests.popleft()()
                    next_maintenance = now
                if now >= next_maintenance or self._maintain:
                    self._maintain = False
                    self._open_due(now)
                    timeout = min(self._housekeeping(now), MAINTENANCE_S)
                    next_maintenance = now + timeout
                    self._dirty.update(self.nodes)
                else:
                    timeout = max(0.0, next_maintenance - now)
                for key, _ in self._selector.select(timeout):
                    if key.fd == self._wake_r:
                        try:
                            while os.read(self._wake_r, 4096):
                                pass
                        except BlockingIOError:
                            pass
                        continue
                    self._readable(key.fd)
                self._publish()
        finally:
            self._shutdown_all()

    def _open_due(self, now: float) -> None:
        opening = sum(1 for s in self._live.values() if not s.node.answered)
        for node in self.nodes:
            if opening >= self.max_opening:
                break
            if node.running or node.done or node.next_attempt > now:
                continue
            self._spawn(node, now)
            opening += 1

    def _spawn(self, node: Node, now: float) -> None:
        argv = remote.ssh_argv(node.spec, node.command(), ssh_config=self.ssh_config,
                               connect_timeout=self.policy.connect_timeout, ssh=self.ssh)
        node.session_started(now)
        try:
            # A new session: the terminal's Ctrl-C reaches the viewer, never the ssh clients.
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True,
                                    close_fds=True)
        except OSError as exc:
            self.spawn_errors += 1
            node.on_stderr(f"cannot run {self.ssh}: {exc}".encode())
            node.on_exit(states.SSH_ERROR_EXIT, now)
            return
        assert proc.stdout is not None and proc.stderr is not None
        session = _Session(node, proc, LineSplitter(self.max_line),
                           {proc.stdout.fileno(), proc.stderr.fileno()})
        for fd in session.open_fds:
            os.set_blocking(fd, False)
            self._sessions[fd] = session
            self._selector.register(fd, selectors.EVENT_READ, None)
        self._live[node.spec.name] = session

    def _readable(self, fd: int) -> None:
        session = self._sessions.get(fd)
        if session is None:
            return
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        node = session.node
        now = self.clock()
        self._dirty.add(node)
        if not data:
            self._close_fd(session, fd)
            if fd == session.proc.stdout.fileno():  # type: ignore[union-attr]
                for line in session.out.close():
                    node.on_line(line, now)
            if not session.open_fds:
                session.eof_at = now
                if not self._reap(session, now):
                    self._maintain = True  # exiting: reap it at the next short tick
            return
        if fd == session.proc.stderr.fileno():  # type: ignore[union-attr]
            node.on_stderr(data)
            return
        answered = node.answered
        with self._lock:  # statuses() may be read meanwhile
            for line in session.out.feed(data):
                if not node.on_line(line, now):
                    self._kill(session)
                    break
        if node.answered and not answered:
            self._maintain = True  # a connection slot came free

    def _close_fd(self, session: _Session, fd: int) -> None:
        if fd in session.open_fds:
            session.open_fds.discard(fd)
            self._selector.unregister(fd)
            self._sessions.pop(fd, None)

    def _kill(self, session: _Session) -> None:
        if session.killed:
            return
        session.killed = True
        try:
            # The session's process group: ssh and whatever it started (a ProxyCommand).
            os.killpg(session.proc.pid, signal.SIGKILL)
        except OSError:
            pass

    def _reap(self, session: _Session, now: float) -> bool:
        code = session.proc.poll()
        if code is None:
            if session.eof_at is not None and now - session.eof_at > EXIT_GRACE_S:
                self._kill(session)
            return False
        for fd in list(session.open_fds):
            self._close_fd(session, fd)
        for stream in (session.proc.stdin, session.proc.stdout, session.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self._live.pop(session.node.spec.name, None)
        session.node.on_exit(code, now)
        self._dirty.add(session.node)
        self._maintain = True  # a fallback or a reconnect may be due at once
        return True

    def _housekeeping(self, now: float) -> float:
        """Timeouts, staleness and reaping; returns how long the selector may sleep."""
        timeout = IDLE_TICK_S
        policy = self.policy
        for session in list(self._live.values()):
            node = session.node
            if session.eof_at is not None:
                if not self._reap(session, now):
                    timeout = min(timeout, 0.05)
                continue
            if not node.answered:
                if now - node.started > policy.answer_timeout:  # type: ignore[operator]
                    node.kill_reason = f"no answer within {policy.answer_timeout:g} s"
                    self._kill(session)
                continue
            node.flush_idle(now)
            quiet = now - (node.received or node.started)
            if node.state == states.OK and quiet > policy.stale_after:  # type: ignore[operator]
                node.on_stale(now)
            elif node.state == states.STALE:
                node.on_stale(now)  # keeps the age in the reason current
                if quiet > policy.restart_after:  # type: ignore[operator]
                    node.kill_reason = f"no data for {quiet:.0f} s: reconnecting"
                    self._kill(session)  # a hung remote: start over
        # The next reconnect, if a slot is free for it; a node waiting for a slot waits for a
        # session to answer (which asks for maintenance), not in a busy loop.
        opening = sum(1 for s in self._live.values() if not s.node.answered)
        if opening < self.max_opening:
            for node in self.nodes:
                if not node.running and not node.done:
                    timeout = min(timeout, max(0.0, node.next_attempt - now))
        return timeout

    def _publish(self) -> None:
        if not self._dirty:
            return
        dirty, self._dirty = self._dirty, set()
        with self._changed:
            changed = False
            for node in dirty:
                if self._statuses[node.spec.name].seq != node.seq:
                    self._statuses[node.spec.name] = node.status()
                    changed = True
            if changed:
                self.version += 1
                self._changed.notify_all()
        if changed and self.on_change is not None:
            self.on_change()

    def _shutdown_all(self) -> None:
        """Close every session: EOF on the agents' stdin first (they exit cleanly), then kill."""
        sessions = list(self._live.values())
        for session in sessions:
            try:
                if session.proc.stdin is not None:
                    session.proc.stdin.close()
            except OSError:
                pass
        deadline = time.monotonic() + 1.0
        for session in sessions:
            try:
                session.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._kill(session)
                try:
                    session.proc.wait(1.0)
                except subprocess.TimeoutExpired:
                    pass
            for stream in (session.proc.stdout, session.proc.stderr):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
        self._live.clear()
        for fd in list(self._sessions):
            try:
                self._selector.unregister(fd)
            except (KeyError, ValueError):
                pass
        self._sessions.clear()
