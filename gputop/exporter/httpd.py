"""A threaded HTTP server that hostile clients cannot hold down, for the exporter.

http.server's ThreadingHTTPServer gives every connection a thread for as long as the client
likes, reads as many header bytes as it is sent, listens with a backlog of 5, spins on accept()
once the process is out of file descriptors and prints a traceback for every client that fails
a TLS handshake. This keeps its request parsing (the exporter's answers stay byte for byte what
they were) and bounds everything around it:

- **places**: at most ``Limits.connections`` connections are served at once, one thread each.
  When all are taken, a connection that has waited longest for a request (an idle keep-alive,
  a slow sender) gives its place to the newcomer; failing that the newcomer waits a moment in
  the queue, then gets a 503. Connections beyond the places wait in the kernel's listen queue
  (``Limits.backlog``), costing no descriptor and no thread.
- **time**: a new connection has ``header_timeout`` for its TLS handshake and for its request
  head; a kept-alive one ``idle_timeout`` to start its next request and ``header_timeout`` to
  finish its head once started; an answer gets ``write_timeout``. The deadline covers the whole
  head, not each read, so a byte every few seconds does not keep a connection alive.
- **size**: a request head (request line and headers) over ``header_bytes`` is answered 431
  and the connection closed, before the rest is read.
- **log**: a client that fails its TLS handshake costs one line; the process running out of
  file descriptors one line, after which accepting pauses and retries with a back-off; nothing
  ever prints a traceback.

A well-kept library was considered: waitress has these bounds but no TLS; cheroot has both but
would replace the request handling the exposition tests pin and add a dependency for what this
module does in a page; aiohttp is reserved to ``gputop web``.
"""

from __future__ import annotations

import errno
import http.client
import io
import resource
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, cast

Log = Callable[[str], None]

# accept() errors that mean "out of descriptors or memory": retrying at once spins a core.
_STARVED = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_DRAIN_BYTES, _DRAIN_CHUNK = 256 << 10, 16 << 10  # read before closing: never waited for
RESERVED_FDS = 64  # descriptors kept for everything but connections (npu-smi pipes, files)
_REFUSAL = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: 21\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
            b"too many connections\n")


@dataclass(frozen=True)
class Limits:
    connections: int = 128  # served at once, a thread each; Prometheus keeps one per server
    header_timeout: float = 10.0  # TLS handshake; a request head once its first byte is in
    idle_timeout: float = 60.0  # a kept-alive connection waiting for its next request
    write_timeout: float = 30.0  # sending one answer (a slow reader is dropped after it)
    header_bytes: int = 32 << 10  # a request head; Prometheus sends under 1 KiB
    backlog: int = 1024  # the listen queue: a fleet of Prometheus servers scraping at once
    evict_after: float = 0.5  # a connection waiting this long for a request may lose its place
    queue_wait: float = 2.0  # a new connection waits this long for a place before a 503


def default_log(line: str) -> None:
    print(f"gputop exporter: {line}", file=sys.stderr, flush=True)


class Place:
    """A connection's place among the served ones: whether it is waiting for a request (and
    since when), so that the longest waiter can be evicted when all places are taken."""

    __slots__ = ("sock", "waiting", "since", "evicted")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.waiting = True
        self.since = time.monotonic()
        self.evicted = False


class Places:
    """At most ``limit`` connections served at once (see the module's docstring)."""

    def __init__(self, limit: int, evict_after: float) -> None:
        self.limit = limit
        self.evict_after = evict_after
        self._held: set[Place] = set()
        self._cond = threading.Condition()

    def take(self, sock: socket.socket, wait: float, closing: threading.Event) -> Place | None:
        """Return a place for ``sock``, evicting the longest waiter if all are taken and it
        has waited ``evict_after``; None if none came free within ``wait`` seconds."""
        deadline = time.monotonic() + wait
        with self._cond:
            while True:
                if len(self._held) < self.limit:
                    place = Place(sock)
                    self._held.add(place)
                    return place
                if not any(p.evicted for p in self._held):
                    self._evict_one()  # its place counts until its thread gives it back
                left = deadline - time.monotonic()
                if left <= 0 or closing.is_set():
                    return None
                self._cond.wait(min(left, self.evict_after / 4))

    def _evict_one(self) -> None:
        """Close the connection that has waited longest for a request (caller holds the lock)."""
        now = time.monotonic()
        waiting = [p for p in self._held if p.waiting and now - p.since >= self.evict_after]
        if waiting:
            victim = min(waiting, key=lambda p: p.since)
            victim.evicted = True
            _shutdown(victim.sock)  # its thread's read returns at once, and the thread ends

    def wait(self, place: Place) -> bool:
        """Mark ``place`` as waiting for a request; False if it was evicted."""
        with self._cond:
            place.waiting, place.since = True, time.monotonic()
            return not place.evicted

    def serve(self, place: Place) -> bool:
        """Mark ``place`` as answering a request (not evictable); False if it was evicted."""
        with self._cond:
            place.waiting = False
            return not place.evicted

    def give_back(self, place: Place) -> None:
        with self._cond:
            self._held.discard(place)
            self._cond.notify()

    def close_all(self) -> None:
        with self._cond:
            for place in self._held:
                place.evicted = True
                _shutdown(place.sock)
            self._held.clear()
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._held)


def _shutdown(sock: socket.socket) -> None:
    try:
        # socket.socket's own shutdown, also for an SSLSocket: its override drops the TLS state
        # under the thread still reading it.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class _DeadlineReader(io.RawIOBase):
    """A socket as a raw stream whose reads give up at a deadline for the whole request head,
    however the bytes trickle in (a socket timeout alone restarts with every byte)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.deadline = float("inf")
        self._then: float | None = None

    def expect(self, wait: float, then: float | None) -> None:
        """The next request must start within ``wait`` seconds, and its head be complete
        ``then`` seconds after its first byte (None: by the same deadline)."""
        self.deadline = time.monotonic() + wait
        self._then = then

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request head did not arrive in time")
        self.sock.settimeout(left)
        n = self.sock.recv_into(buffer)
        if n and self._then is not None:
            self.deadline, self._then = time.monotonic() + self._then, None
        return n


class HeadTooLarge(http.client.LineTooLong):
    """The request head is over its byte budget (http.server answers LineTooLong with 431)."""


class _HeadBudget:
    """A buffered stream whose lines, from the request line to the blank line ending the
    headers, may add up to at most ``limit`` bytes."""

    def __init__(self, stream: io.BufferedReader, limit: int) -> None:
        self.stream = stream
        self.limit = limit
        self.left = limit

    def reset(self) -> None:
        self.left = self.limit

    def readline(self, size: int = -1) -> bytes:
        cap = self.left + 1 if size is None or size < 0 else min(size, self.left + 1)
        line = self.stream.readline(cap)
        self.left -= len(line)
        if self.left < 0:
            raise HeadTooLarge(f"request head over {self.limit} bytes")
        return line

    def read(self, size: int = -1) -> bytes:
        return self.stream.read(size)

    def close(self) -> None:
        self.stream.close()

    @property
    def closed(self) -> bool:
        return self.stream.closed


class BoundedHandler(BaseHTTPRequestHandler):
    """BaseHTTPRequestHandler under the server's Limits; subclasses write the do_GET."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out without waiting for an ACK
    server: BoundedServer

    def __init__(self, request: socket.socket, client_address: Any, server: BoundedServer,
                 place: Place) -> None:
        self.place = place
        self._requests = 0
        super().__init__(request, client_address, server)

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # replaced by one that keeps the deadline and the budget
        self._raw = _DeadlineReader(self.connection)
        # http.server reads rfile through readline/read only, which _HeadBudget has
        self.rfile = cast(io.BufferedIOBase,
                          _HeadBudget(io.BufferedReader(self._raw), self.server.limits.header_bytes))

    def handle_one_request(self) -> None:
        limits = self.server.limits
        if not self.server.places.wait(self.place):
            self.close_connection = True
            return
        if self._requests:
            self._raw.expect(limits.idle_timeout, limits.header_timeout)
        else:
            self._raw.expect(limits.header_timeout, None)
        self._requests += 1
        cast(_HeadBudget, self.rfile).reset()
        try:
            super().handle_one_request()
        except HeadTooLarge as exc:  # in the request line: http.server only checks headers
            self.requestline, self.request_version, self.command = "", "", ""
            self.send_error(431, "Request Header Fields Too Large", str(exc))

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if not self.server.places.serve(self.place):
            self.close_connection = True
            return False
        self.connection.settimeout(self.server.limits.write_timeout)
        return True

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # a scrape a second is not worth a log line


class BoundedServer(HTTPServer):
    """An HTTPServer serving each connection on its own thread, within ``limits``."""

    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BoundedHandler],
                 limits: Limits | None = None, tls: ssl.SSLContext | None = None,
                 log: Log = default_log) -> None:
        self.limits = limits = limits or Limits()
        self.log = log
        self.request_queue_size = limits.backlog
        self.places = Places(_connection_limit(limits.connections), limits.evict_after)
        self._closing = threading.Event()
        self._starved_since: float | None = None
        self._backoff = 0.0
        super().__init__(address, handler)
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True,
                                          do_handshake_on_connect=False)

    # -- accepting
    def get_request(self) -> tuple[socket.socket, Any]:
        try:
            conn, address = self.socket.accept()
        except OSError as exc:
            if exc.errno in _STARVED:
                self._starved(exc)
            raise  # socketserver drops the attempt and comes back on the next select()
        if self._starved_since is not None:
            self.log(f"accepting connections again after "
                     f"{time.monotonic() - self._starved_since:.0f} s")
            self._starved_since, self._backoff = None, 0.0
        return conn, address

    def _starved(self, exc: OSError) -> None:
        """Out of descriptors: say so once, then pause accepting with a growing back-off
        (the pending connections wait in the listen queue) instead of spinning."""
        if self._starved_since is None:
            self._starved_since = time.monotonic()
            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            self.log(f"cannot accept connections: {exc.strerror} (open-files limit {soft}); "
                     "retrying with a back-off")
        self._backoff = min(1.0, max(0.05, self._backoff * 2))
        self._closing.wait(self._backoff)

    def process_request(self, request: Any, client_address: Any) -> None:
        place = self.places.take(request, self.limits.queue_wait, self._closing)
        if place is None:
            _refuse(request)
            self.shutdown_request(request)
            return
        threading.Thread(target=self._connection, args=(request, client_address, place),
                         name="gputop-exporter-connection", daemon=True).start()

    # -- one connection, on its own thread
    def _connection(self, request: socket.socket, client_address: Any, place: Place) -> None:
        try:
            if self._handshake(request, client_address):
                handler = cast(type[BoundedHandler], self.RequestHandlerClass)
                handler(request, client_address, self, place)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self.places.give_back(place)

    def _handshake(self, request: socket.socket, client_address: Any) -> bool:
        """Finish a TLS connection's handshake within the head's time-out; one line if the
        client is not speaking TLS or fails it, nothing if it just went away."""
        if not isinstance(request, ssl.SSLSocket):
            return True
        request.settimeout(self.limits.header_timeout)
        try:
            request.do_handshake()
        except TimeoutError:
            self.log(f"{_peer(client_address)}: TLS handshake did not finish within "
                     f"{self.limits.header_timeout:g} s")
            return False
        except ssl.SSLError as exc:
            if not isinstance(exc, (ssl.SSLEOFError, ssl.SSLZeroReturnError)):
                self.log(f"{_peer(client_address)}: TLS handshake failed: {_tls_reason(exc)}")
            return False
        except OSError:
            return False  # reset or closed before a word of TLS: a port probe, not a client
        return True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line for what went wrong with a connection, never a traceback; a peer that
        went away or timed out is routine and says nothing."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ssl.SSLError):
            self.log(f"{_peer(client_address)}: TLS error: {_tls_reason(exc)}")
        elif not isinstance(exc, OSError):
            self.log(f"{_peer(client_address)}: {type(exc).__name__}: {exc}")

    def shutdown_request(self, request: Any) -> None:
        """Close a connection after reading what it already sent: closing with unread bytes
        makes the kernel reset the connection, and the client may lose our last answer (a 431
        to a head that was too large) with it."""
        try:
            socket.socket.shutdown(request, socket.SHUT_WR)
            request.setblocking(False)
            for _ in range(_DRAIN_BYTES // _DRAIN_CHUNK):
                if not socket.socket.recv(request, _DRAIN_CHUNK):
                    break
        except OSError:
            pass
        self.close_request(request)

    # -- stopping
    def shutdown(self) -> None:
        self._closing.set()
        super().shutdown()

    def server_close(self) -> None:
        self._closing.set()
        super().server_close()
        self.places.close_all()


def _connection_limit(wanted: int) -> int:
    """``wanted``, or fewer where the open-files limit could not hold that many connections
    besides the process's own descriptors."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - RESERVED_FDS))


def _refuse(sock: socket.socket) -> None:
    """Tell a connection there is no place for it, without ever waiting on it."""
    if isinstance(sock, ssl.SSLSocket):
        return  # no TLS session to say it in: closing is the answer
    try:
        sock.setblocking(False)
        sock.send(_REFUSAL)
    except OSError:
        pass


def _peer(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host = address[0]
        return f"[{host}]:{address[1]}" if ":" in str(host) else f"{host}:{address[1]}"
    return str(address)


def _tls_reason(exc: ssl.SSLError) -> str:
    if exc.reason == "HTTP_REQUEST":
        return "the client spoke plain HTTP to the TLS port"
    text = exc.reason or exc.strerror or str(exc)
    return str(text).replace("_", " ").lower()
