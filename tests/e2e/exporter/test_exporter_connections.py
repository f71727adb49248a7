"""The exporter's connections against hostile clients on 127.0.0.1: each is bounded in time,
in number and in bytes, a burst waits in the listen queue instead of being dropped, running out
of descriptors pauses accepting with one line, and a bad TLS client costs one line."""

from __future__ import annotations

import contextlib
import resource
import selectors
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import psutil
import pytest

from gputop.exporter import httpd, webconfig
from tests.support.hostile_serving import (
    GET_HEALTH,
    ask,
    closed_by_server,
    connection_threads,
    read_all,
    self_signed,
    serving,
    wait_until,
)
from tests.support.prom_harness import ROOT

# ---------------------------------------------------------------------------- time-outs

def test_silent_and_trickling_connections_time_out_and_release_their_threads():
    limits = httpd.Limits(header_timeout=0.5, idle_timeout=0.5)
    with serving(limits) as (port, _):
        silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
        trickling = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
        stop = threading.Event()

        def trickle() -> None:  # a byte every 0.2 s: each read alone is well within 0.5 s
            for sock in trickling:
                sock.sendall(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
            while not stop.wait(0.2):
                for sock in trickling:
                    with contextlib.suppress(OSError):
                        sock.send(b"a")

        threading.Thread(target=trickle, daemon=True).start()
        try:
            assert wait_until(lambda: connection_threads() == 10, 2)
            started = time.monotonic()
            assert all(closed_by_server(s, 3.0) for s in silent + trickling)
            assert time.monotonic() - started < 1.5
            assert wait_until(lambda: connection_threads() == 0, 1)
        finally:
            stop.set()
            for sock in silent + trickling:
                sock.close()


def test_a_kept_alive_connection_is_closed_after_its_idle_time_out():
    with serving(httpd.Limits(idle_timeout=0.3)) as (port, _):
        with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
            assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")
            started = time.monotonic()
            assert closed_by_server(sock, 3.0)
            assert 0.25 < time.monotonic() - started < 1.5


# ---------------------------------------------------------------------------- bounds

def test_more_connections_than_places_hold_no_more_threads_and_a_scrape_still_succeeds():
    limits = httpd.Limits(connections=4, evict_after=0.2)
    with serving(limits) as (port, _):
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
        try:
            peak = 0
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                peak = max(peak, connection_threads())
                time.sleep(0.01)
            assert peak <= 4 + 1  # an evicted connection's thread may take a moment to end
            assert ask(port).startswith(b"HTTP/1.1 200 OK")
        finally:
            for sock in idle:
                sock.close()


def test_a_request_head_over_its_byte_budget_is_answered_431_without_being_read_whole():
    with serving(httpd.Limits(header_bytes=8192)) as (port, _):
        many = b"GET /health HTTP/1.1\r\n" + b"".join(
            b"X-%d: %s\r\n" % (i, b"v" * 1000) for i in range(20))  # no end: more is coming
        assert ask(port, many).startswith(b"HTTP/1.1 431 ")
        long_line = b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n"
        assert ask(port, long_line).startswith(b"HTTP/1.1 431 ")
        # 99 headers of 64 kB: refused after the budget, not read to the end (6.3 MB).
        with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\n")
            sent = 0
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for _ in range(99):
                    sock.sendall(b"X: " + b"v" * 64000 + b"\r\n")
                    sent += 64003
            assert sent < 99 * 64003


@pytest.fixture
def descriptors_for_a_thousand() -> Iterator[int]:
    """How many client sockets to open (a thousand, unless the hard open-files limit is too low)
    besides the server's: the soft limit raised where it is lower (often 1024), put back after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 2048 if hard == resource.RLIM_INFINITY else min(hard, 2048)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    now = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    try:
        yield 1000 if now == resource.RLIM_INFINITY else min(1000, now - 256)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_burst_of_a_thousand_connections_is_answered_or_refused_never_dropped(
        descriptors_for_a_thousand):
    n = descriptors_for_a_thousand
    with serving(httpd.Limits(connections=32)) as (port, _):
        sel = selectors.DefaultSelector()
        answers: dict[socket.socket, bytes] = {}
        for _ in range(n):
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
            answers[sock] = b""
            sel.register(sock, selectors.EVENT_WRITE)
        open_ = n
        deadline = time.monotonic() + 8
        try:
            while open_ and time.monotonic() < deadline:
                for key, events in sel.select(0.1):
                    sock = key.fileobj
                    if events & selectors.EVENT_WRITE:
                        try:
                            sock.send(GET_HEALTH)
                        except OSError:
                            answers[sock] += b"<send failed>"
                        sel.modify(sock, selectors.EVENT_READ)
                        continue
                    try:
                        chunk = sock.recv(4096)
                    except OSError as exc:
                        chunk, answers[sock] = b"", answers[sock] + f"<{exc}>".encode()
                    answers[sock] += chunk
                    if not chunk:
                        sel.unregister(sock)
                        open_ -= 1
        finally:
            sel.close()
            for sock in answers:
                sock.close()
        statuses = [a[:12] for a in answers.values()]
        good = sum(s in (b"HTTP/1.1 200", b"HTTP/1.1 503") for s in statuses)
        assert good == n, {s for s in statuses if s not in (b"HTTP/1.1 200", b"HTTP/1.1 503")}


FD_CHILD = """
import os, resource, sys, threading
resource.setrlimit(resource.RLIMIT_NOFILE, (128, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from gputop.exporter import own, server, webconfig
from gputop.core.model import Device, Snapshot
latest = server.Latest(own.Options(), "t")
latest.publish(Snapshot(host="n", time=1.0, backend="sim", devices=(Device(index=0),)))
srv = server.serve("127.0.0.1", 0, latest, webconfig.WebConfig(), 60.0)
threading.Thread(target=srv.serve_forever, daemon=True).start()
burnt = []
try:
    while True:
        burnt.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
print(srv.server_address[1], flush=True)
sys.stdin.readline()
for fd in burnt:
    os.close(fd)
sys.stdin.readline()
"""


def test_out_of_descriptors_pauses_accepting_with_one_line_and_no_spin():
    child = subprocess.Popen([sys.executable, "-c", FD_CHILD], cwd=ROOT, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    clients: list[socket.socket] = []
    try:
        port = int(child.stdout.readline())
        for _ in range(5):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)  # the listen queue
            sock.sendall(GET_HEALTH)
            clients.append(sock)
        proc = psutil.Process(child.pid)
        time.sleep(0.3)  # the first accept fails and backs off
        before = sum(proc.cpu_times()[:2])
        time.sleep(1.2)
        spent = sum(proc.cpu_times()[:2]) - before
        assert spent < 0.3, f"the accept loop spun: {spent:.2f} s of CPU in 1.2 s"
        child.stdin.write("\n")
        child.stdin.flush()  # descriptors free again: the queued scrapes are answered
        for sock in clients:
            assert read_all(sock).startswith(b"HTTP/1.1 200 OK")
        child.stdin.write("\n")
        child.stdin.flush()
        _, err = child.communicate(timeout=5)
    finally:
        for sock in clients:
            sock.close()
        if child.poll() is None:
            child.kill()
            child.wait()
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    assert len(lines) == 2, err
    assert "cannot accept connections: Too many open files (open-files limit 128)" in lines[0]
    assert "accepting connections again" in lines[1]


# ---------------------------------------------------------------------------- TLS

@pytest.fixture(scope="module")
def tls_web(tmp_path_factory) -> webconfig.WebConfig:
    return webconfig.load(str(self_signed(tmp_path_factory.mktemp("tls"))))


def test_plain_http_to_the_tls_port_is_one_line_and_no_traceback(tls_web, capfd):
    with serving(web=tls_web) as (port, lines):
        for _ in range(3):
            ask(port, b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
        assert wait_until(lambda: len(lines) == 3, 2)
        silent = socket.create_connection(("127.0.0.1", port))  # a port probe: says nothing
        silent.close()
        time.sleep(0.2)
    assert len(lines) == 3, lines
    assert all("TLS handshake failed: the client spoke plain HTTP to the TLS port" in line
               and line.startswith("127.0.0.1:") for line in lines)
    assert "Traceback" not in capfd.readouterr().err


def test_a_tls_handshake_that_never_comes_times_out_with_one_line(tls_web):
    with serving(httpd.Limits(header_timeout=0.3), web=tls_web) as (port, lines):
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"\x16\x03\x01")  # the start of a ClientHello, and then nothing
            assert closed_by_server(sock, 3.0)
        assert wait_until(lambda: len(lines) == 1, 1)
    assert "did not finish within 0.3 s" in lines[0]
