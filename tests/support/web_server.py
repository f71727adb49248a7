"""`gputop web` started by a test on a port the kernel picks, read back from its first line, and
stopped by PID (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.support.paths import ROOT, gputop_cmd

URL_LINE = re.compile(r"^gputop web: http://(?P<host>\S+?):(?P<port>\d+)/(\?token=(?P<token>\S+))?")


@dataclass
class WebServer:
    proc: subprocess.Popen
    port: int
    token: str | None
    first_line: str
    log: Path  # its stdout and stderr (a file: a pipe nobody reads could fill and block it)
    final_output: str = ""

    @property
    def url(self) -> str:
        """The page on 127.0.0.1: the only address a test ever connects to."""
        return f"http://127.0.0.1:{self.port}/"

    def with_token(self, path: str = "") -> str:
        """``url + path`` with the printed token in its query, as a viewer who has it asks."""
        assert self.token, self.first_line
        return f"{self.url}{path}{'&' if '?' in path else '?'}token={self.token}"

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.log.exists():
            self.final_output = self.output()
            self.log.unlink()
        return self.proc.returncode

    def output(self) -> str:
        if not self.log.exists():
            return self.final_output
        return self.log.read_text(errors="replace")

    def children(self) -> list[int]:
        import psutil

        try:
            return [c.pid for c in psutil.Process(self.proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            return []


def viewer_session():
    """An HTTP client that keeps the token's cookie for 127.0.0.1 (aiohttp's default jar keeps
    none for an IP address), as a browser does."""
    import aiohttp

    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


def start_web(*args: str, timeout: float = 30.0, env: dict | None = None) -> WebServer:
    """``gputop web --listen 127.0.0.1:0 ARGS`` unless ARGS name a ``--listen`` of their own."""
    argv = list(args)
    if "--listen" not in argv:
        argv = ["--listen", "127.0.0.1:0", *argv]
    fd, name = tempfile.mkstemp(prefix="gputop-web-", suffix=".log")
    os.close(fd)
    log = Path(name)
    with log.open("wb") as out:
        proc = subprocess.Popen(gputop_cmd("web", *argv), cwd=ROOT, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=out, env={**os.environ, **(env or {})})
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text(errors="replace")
        if "\n" in text:
            break
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
            raise AssertionError(f"gputop web printed no URL ({proc.returncode}): {text!r}")
        time.sleep(0.05)
    first = text.splitlines()[0]
    match = URL_LINE.match(first)
    assert match, text
    return WebServer(proc, int(match["port"]), match["token"], first, log)


class RawViewer:
    """One viewer's websocket over a plain socket, as textual.js speaks it (JSON text frames,
    masked; pings answered), and able to vanish abruptly: the connection reset, no close frame
    (a browser killed, a laptop's network gone at once)."""

    def __init__(self, server: WebServer, width: int = 120, height: int = 40) -> None:
        import base64
        import socket

        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        path = f"/ws?width={width}&height={height}&token={server.token}"
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                           "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            head += chunk
        head, _, self.buffer = head.partition(b"\r\n\r\n")
        self.status = int(head.split(b" ", 2)[1]) if head else 0
        self.received = 0  # bytes of the app's output

    def _send(self, opcode: int, payload: bytes) -> None:
        import struct

        mask = os.urandom(4)
        assert len(payload) < 126
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(struct.pack("!BB", 0x80 | opcode, 0x80 | len(payload)) + mask + masked)

    def press(self, keys: str) -> None:
        import json

        self._send(0x1, json.dumps(["stdin", keys]).encode())

    def _frames(self):
        """Complete frames in the buffer: (opcode, payload), each taken out of it."""
        import struct

        while len(self.buffer) >= 2:
            opcode, size = self.buffer[0] & 0x0F, self.buffer[1] & 0x7F
            at = 2
            if size == 126:
                if len(self.buffer) < 4:
                    return
                size, at = struct.unpack("!H", self.buffer[2:4])[0], 4
            elif size == 127:
                if len(self.buffer) < 10:
                    return
                size, at = struct.unpack("!Q", self.buffer[2:10])[0], 10
            if len(self.buffer) < at + size:
                return
            payload, self.buffer = self.buffer[at:at + size], self.buffer[at + size:]
            yield opcode, payload

    def read(self, at_least: int = 1000, timeout: float = 30.0) -> int:
        """Read what the app sends until ``at_least`` more bytes of it came (or the time is up,
        or the server closed); how many came."""
        deadline = time.monotonic() + timeout
        got = 0
        while got < at_least and time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            self.buffer += chunk
            for opcode, payload in self._frames():
                if opcode == 0x9:  # ping
                    self._send(0xA, payload)
                elif opcode == 0x8:  # close
                    deadline = 0
                else:
                    got += len(payload)
        self.received += got
        return got

    def drain(self, seconds: float) -> None:
        """Read whatever comes for ``seconds``, as a browser keeps reading."""
        self.read(at_least=1 << 40, timeout=seconds)

    def vanish(self) -> None:
        """Reset the connection: no close frame."""
        import socket
        import struct

        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


def read_together(viewers: list[RawViewer], at_least: int = 1000,
                  timeout: float = 30.0) -> list[int]:
    """Read several viewers in turn until each has ``at_least`` bytes (or the time is up); how
    many each got.

    Browser tabs read all the time. Read one after another, a viewer waiting its turn while
    another's app is slow to start (a busy machine) answers no ping, and the server rightly
    ends it after half a heartbeat."""
    got = [0] * len(viewers)
    deadline = time.monotonic() + timeout
    while min(got) < at_least and time.monotonic() < deadline:
        for i, viewer in enumerate(viewers):
            got[i] += viewer.read(max(1, at_least - got[i]), timeout=0.05)
    return got


def gone(pids: list[int], timeout: float = 15.0) -> bool:
    """Whether every one of ``pids`` has ended (or is a zombie) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                   for p in pids):
            return True
        time.sleep(0.1)
    return False
