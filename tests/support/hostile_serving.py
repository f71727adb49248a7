"""Serving the exporter on 127.0.0.1 to a test that plays a hostile client, and the client's
side of it."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from gputop.core.model import Device, Snapshot
from gputop.exporter import httpd, own, server, webconfig
from tests.support.prom_harness import find

GET_HEALTH = b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
CONNECTION_THREAD = "gputop-exporter-connection"


def snapshot(status: str = "ok") -> Snapshot:
    dev = Device(index=0, uuid="GPU-0", name="T", status=status, temperature_c=40.0)
    return Snapshot(host="n", time=1.0, backend="sim", devices=(dev,))


@contextlib.contextmanager
def serving(limits: httpd.Limits | None = None, web: webconfig.WebConfig | None = None,
            latest: server.Latest | None = None) -> Iterator[tuple[int, list[str]]]:
    """A served exporter on 127.0.0.1: (port, its log lines); every connection closed after."""
    if latest is None:
        latest = server.Latest(own.Options(), "t")
        latest.publish(snapshot())
    lines: list[str] = []
    srv = server.serve("127.0.0.1", 0, latest, web or webconfig.WebConfig(), stale_after=60.0,
                       limits=limits, log=lines.append)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield srv.server_address[1], lines
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)
        assert wait_until(lambda: connection_threads() == 0, 3), "connection threads outlived"


def connection_threads() -> int:
    return sum(t.name == CONNECTION_THREAD for t in threading.enumerate())


def wait_until(cond, timeout: float, step: float = 0.02) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return bool(cond())


def ask(port: int, data: bytes = GET_HEALTH, timeout: float = 3.0) -> bytes:
    """Send ``data`` and read the answer until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        return read_all(sock)


def read_all(sock: socket.socket) -> bytes:
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes ``sock`` (EOF or reset) within ``within`` seconds."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def self_signed(folder: Path) -> Path:
    """Write a self-signed certificate for 127.0.0.1 (c.pem, k.pem) and a web config serving it
    (web.yml) into ``folder``; return the web config's path."""
    subprocess.run([find("openssl"), "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                    "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(folder / "k.pem"), "-out", str(folder / "c.pem")],
                   check=True, capture_output=True)
    (folder / "web.yml").write_text("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n")
    return folder / "web.yml"
