"""The exporter's HTTP server: ``/metrics`` serves the exposition rendered from the sampler's
latest snapshot (a scrape never reaches the device, so scrapers add no device load) and
``/health`` answers 200 once a fresh snapshot exists (503 with the reason before that, or when
sampling stalls). dcgm-exporter serves ``/health`` too, so existing probes keep working."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from gputop.exporter import collect, exposition
from gputop.exporter.own import Options
from gputop.exporter.webconfig import WebConfig
from gputop.model import Snapshot


class Latest:
    """The newest snapshot, rendered once when it arrives; every scrape sends those bytes."""

    def __init__(self, opts: Options, version: str, clock: Callable[[], float] = time.monotonic):
        self.opts = opts
        self.version = version
        self.clock = clock
        self._lock = threading.Lock()
        self.body: bytes | None = None
        self.received: float | None = None
        self.problem: str | None = "no snapshot yet"

    def publish(self, snap: Snapshot) -> None:
        body = exposition.render(collect.families(snap, self.opts, self.version))
        with self._lock:
            self.body, self.received, self.problem = body, self.clock(), None

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            self.problem = f"sampling failed: {exc}"

    def read(self) -> tuple[bytes | None, float | None, str | None]:
        with self._lock:
            return self.body, self.received, self.problem


def make_handler(latest: Latest, web: WebConfig, stale_after: float):
    class Handler(BaseHTTPRequestHandler):
        server_version = "gputop-exporter"
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out without waiting for an ACK

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if not web.authorized(self.headers.get("Authorization")):
                self._send(401, b"Unauthorized\n", "text/plain; charset=utf-8",
                           {"WWW-Authenticate": 'Basic realm="gputop"'})
                return
            path = self.path.split("?", 1)[0]
            body, received, problem = latest.read()
            if path == "/metrics":
                if body is None:
                    self._send(503, f"{problem}\n".encode(), "text/plain; charset=utf-8")
                else:
                    self._send(200, body, exposition.CONTENT_TYPE)
            elif path == "/health":
                age = None if received is None else latest.clock() - received
                if age is not None and age <= stale_after:
                    self._send(200, b"OK\n", "text/plain; charset=utf-8")
                else:
                    reason = problem or f"last snapshot {age:.0f} s ago"
                    self._send(503, f"{reason}\n".encode(), "text/plain; charset=utf-8")
            elif path == "/":
                self._send(200, b"gputop exporter: /metrics, /health\n", "text/plain; charset=utf-8")
            else:
                self._send(404, b"not found\n", "text/plain; charset=utf-8")

        def _send(self, code: int, body: bytes, ctype: str,
                  extra: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # a scrape a second is not worth a log line

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False


def serve(host: str, port: int, latest: Latest, web: WebConfig, stale_after: float) -> Server:
    server = Server((host, port), make_handler(latest, web, stale_after))
    if web.tls is not None:
        server.socket = web.tls.wrap_socket(server.socket, server_side=True,
                                            do_handshake_on_connect=False)
    return server
