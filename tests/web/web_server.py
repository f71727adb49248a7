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

from tests.conftest import ROOT, gputop_cmd

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

