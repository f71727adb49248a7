"""The exporter's HTTP server: ``/metrics`` serves the exposition rendered from the sampler's
latest snapshot (a scrape never reaches the device, so scrapers add no device load) and
``/health`` answers 200 while that snapshot is fresh and every device in it reads ``ok``.
dcgm-exporter serves ``/health`` too, so existing probes keep working.

A failure shows from the first sample that sees it: a device whose reads fail is in the
snapshot with its status (``gputop_device_status``), and ``/health`` answers 503 naming it; a
sample that fails as a whole, or a snapshot older than ``stale_after`` (a sampler stuck in a
driver call), makes ``/metrics`` answer 503 too, so that Prometheus marks the target down and
its series stale instead of recording the last values as current. The connection handling
(time-outs, bounds, TLS) is ``httpd``'s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from gputop.analysis.waste import WasteLedger
from gputop.core.model import Snapshot
from gputop.core.userfile import one_line
from gputop.exporter import collect, exposition
from gputop.exporter.httpd import BoundedHandler, BoundedServer, Limits, Log, default_log
from gputop.exporter.own import Options
from gputop.exporter.webconfig import Busy, WebConfig

TEXT = "text/plain; charset=utf-8"


def device_trouble(snap: Snapshot) -> str | None:
    """Say which devices are not ``ok`` and why, for /health; None when all are."""
    bad = [f"GPU {d.index} {d.status}" + (f" ({d.status_reason})" if d.status_reason else "")
           for d in snap.devices if d.status != "ok"]
    return one_line("; ".join(bad), 500) if bad else None


class Latest:
    """The newest snapshot, rendered once when it arrives; every scrape sends those bytes."""

    def __init__(self, opts: Options, version: str, clock: Callable[[], float] = time.monotonic,
                 waste: WasteLedger | None = None):
        self.opts = opts
        # The exporter's own idle ledger, fed by its sampler (annotate) before each publish.
        self.waste = waste
        self.version = version
        self.clock = clock
        self._lock = threading.Lock()
        self.body: bytes | None = None
        self.received: float | None = None
        self.problem: str | None = "no snapshot yet"  # why there is nothing to serve
        self.trouble: str | None = None  # which served devices are not ok

    def publish(self, snap: Snapshot) -> None:
        jobs = self.waste.accounts if self.waste is not None else None
        body = exposition.render(collect.families(snap, self.opts, self.version, jobs))
        trouble = device_trouble(snap)
        with self._lock:
            self.body, self.received, self.problem, self.trouble = body, self.clock(), None, trouble

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            self.body, self.problem = None, f"sampling failed: {one_line(str(exc) or repr(exc))}"

    def read(self) -> tuple[bytes | None, float | None, str | None]:
        with self._lock:
            return self.body, self.received, self.problem

    def answer(self, path: str, stale_after: float) -> tuple[int, bytes, str]:
        """The status, body and content type of a GET of ``path``."""
        with self._lock:
            body, received, problem, trouble = self.body, self.received, self.problem, self.trouble
        age = None if received is None else self.clock() - received
        if problem is None and age is not None and age > stale_after:
            problem = f"last snapshot {age:.0f} s ago"
        if path == "/metrics":
            if problem is not None or body is None:
                return 503, f"{problem}\n".encode(), TEXT
            return 200, body, exposition.CONTENT_TYPE
        if path == "/health":
            reason = problem or trouble
            return (503, f"{reason}\n".encode(), TEXT) if reason else (200, b"OK\n", TEXT)
        if path == "/":
            return 200, b"gputop exporter: /metrics, /health\n", TEXT
        return 404, b"not found\n", TEXT


def make_handler(latest: Latest, web: WebConfig, stale_after: float) -> type[BoundedHandler]:
    class Handler(BoundedHandler):
        server_version = "gputop-exporter"

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            try:
                authorized = web.authorized(self.headers.get("Authorization"))
            except Busy as exc:
                self._send(503, f"{exc}\n".encode(), TEXT, {"Retry-After": "1"})
                return
            if not authorized:
                self._send(401, b"Unauthorized\n", TEXT,
                           {"WWW-Authenticate": 'Basic realm="gputop"'})
                return
            self._send(*latest.answer(self.path.split("?", 1)[0], stale_after))

        def _send(self, code: int, body: bytes, ctype: str,
                  extra: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

    return Handler


def serve(host: str, port: int, latest: Latest, web: WebConfig, stale_after: float,
          limits: Limits | None = None, log: Log = default_log) -> BoundedServer:
    return BoundedServer((host, port), make_handler(latest, web, stale_after), limits,
                         tls=web.tls, log=log)
