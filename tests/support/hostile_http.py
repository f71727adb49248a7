"""A hostile HTTP server on 127.0.0.1 for the Prometheus transport's tests: it answers every
request one chosen bad way (a byte a second, without end, 60 MiB, 100 000-deep JSON, HTML, or
never). It runs on threads of the test process and stops, connections and all, on close()."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

import pytest

MIB = 1024 * 1024
_SERIES = b'{"metric":{},"value":[1,"1"]},'


def _headers(content_type: str = "application/json", length: int | None = None) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n"
    if length is not None:
        head += f"Content-Length: {length}\r\n"
    return (head + "\r\n").encode()


def trickle(conn: socket.socket, stopped: threading.Event) -> None:
    """A valid-looking answer, one byte a second: no single read ever waits long."""
    for byte in _headers() + b'{"status":"success","data":{"resultType":"vector","result":[]}}':
        conn.sendall(bytes([byte]))
        if stopped.wait(1.0):
            return


def endless(conn: socket.socket, stopped: threading.Event) -> None:
    """A body with no length that never ends."""
    conn.sendall(_headers())
    chunk = b" " * (64 << 10)
    while not stopped.is_set():
        conn.sendall(chunk)


def sixty_mib(conn: socket.socket, stopped: threading.Event) -> None:
    """A well-formed vector of 60 MiB (two million empty series), its length announced."""
    head = b'{"status":"success","data":{"resultType":"vector","result":['
    tail = b'{"metric":{},"value":[1,"1"]}]}}'
    block = _SERIES * (MIB // len(_SERIES))
    blocks = 60
    conn.sendall(_headers(length=len(head) + blocks * len(block) + len(tail)) + head)
    for _ in range(blocks):
        if stopped.is_set():
            return
        conn.sendall(block)
    conn.sendall(tail)


def deep(conn: socket.socket, stopped: threading.Event) -> None:
    """JSON nested 100 000 levels deep."""
    body = b"[" * 100_000 + b"]" * 100_000
    conn.sendall(_headers(length=len(body)) + body)


def html(conn: socket.socket, stopped: threading.Event) -> None:
    """A web page where the API answer belongs, as a misconfigured proxy sends."""
    body = b"<html><body>Welcome\x1b[2J</body></html>"
    conn.sendall(_headers("text/html", len(body)) + body)


def silent(conn: socket.socket, stopped: threading.Event) -> None:
    """Reads the request and never answers."""
    stopped.wait()


class HostileServer:
    """Listens on 127.0.0.1 (a free port) and answers each request with ``behaviour``."""

    def __init__(self, behaviour: Callable[[socket.socket, threading.Event], None]) -> None:
        self._behaviour = behaviour
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stopped = threading.Event()
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._accepter = threading.Thread(target=self._accept, daemon=True)
        self._accepter.start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            with self._lock:
                self._conns.append(conn)
                self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            request = b""
            while b"\r\n\r\n" not in request and len(request) < 65536:
                got = conn.recv(4096)
                if not got:
                    return
                request += got
            self._behaviour(conn, self._stopped)
        except OSError:
            pass  # the client gave up: what the tests want of it
        finally:
            conn.close()

    def close(self) -> None:
        self._stopped.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept(); close() alone does not
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            conns, threads = list(self._conns), list(self._threads)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in [self._accepter, *threads]:
            thread.join(5)


@pytest.fixture(name="serve")
def serve_fixture():
    """Start hostile servers for a test (``serve(behaviour)``) and close them all after it."""
    servers: list[HostileServer] = []

    def start(behaviour) -> HostileServer:
        server = HostileServer(behaviour)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
