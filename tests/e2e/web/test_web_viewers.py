"""A real `gputop web --backend sim` and its viewers' app processes: one process per viewer
(no shell), counted before it starts, the page answered while the cap is reached, and no app
process left when its viewer vanishes, hangs, or the server is killed.

Viewers are websockets on 127.0.0.1 (tests/support/web_server.py); every process is ended by PID.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import aiohttp
import psutil
import pytest

from gputop.core.bounds import WEB_VIEWER_MB as VIEWER_MB
from tests.support.web_server import RawViewer, read_together, start_web, viewer_session

SIM = ("--backend", "sim", "--interval", "0.5")


def alive(pids) -> list[int]:
    """Those of ``pids`` that still run (a zombie has ended)."""
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def wait_gone(pids, timeout: float) -> float | None:
    """Seconds until every one of ``pids`` has ended, or None if some still run at ``timeout``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if not alive(pids):
            return time.monotonic() - started
        time.sleep(0.02)
    return None


def kill_all(pids) -> None:
    for pid in alive(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def app_processes(server) -> list[psutil.Process]:
    return [psutil.Process(pid) for pid in server.children()]


async def timed_get(http, url: str) -> tuple[int, float]:
    started = time.monotonic()
    async with http.get(url, timeout=aiohttp.ClientTimeout(total=10)) as r:
        await r.read()
        return r.status, time.monotonic() - started


async def test_a_viewer_is_one_app_process_counted_before_it_starts():
    cap = 3
    server = start_web(*SIM, "--max-viewers", str(cap))
    try:
        async with viewer_session() as http:
            # The tabs open at once: their apps are all still starting (importing Python)
            # while the next ones knock.
            sockets = await asyncio.gather(*(http.ws_connect(server.with_token(
                "ws?width=100&height=30")) for _ in range(cap)))
            status, took = await timed_get(http, server.with_token())
            assert status == 503 and took < 1.0, (status, took)
            started = time.monotonic()
            with pytest.raises(aiohttp.WSServerHandshakeError) as full:
                await http.ws_connect(server.with_token("ws"))
            assert full.value.status == 503 and time.monotonic() - started < 1.0
            apps = app_processes(server)
            commands = [p.cmdline() for p in apps]
            assert len(apps) == cap, commands  # one each, and nothing for the refused one
            assert all(c[1:3] == ["-m", "gputop"] and "--readonly" in c for c in commands), \
                commands  # exec'd as is: no shell between the server and the app
            assert all(p.ppid() == server.proc.pid for p in apps)
            for ws in sockets:  # they all came up
                data = b""
                while len(data) < 1000:
                    message = await ws.receive(timeout=30)
                    assert message.type == aiohttp.WSMsgType.BINARY, message
                    data += message.data
            # The memory the start line states per viewer is what one costs.
            rss_mb = max(p.memory_info().rss for p in apps) / 2**20
            assert VIEWER_MB / 3 < rss_mb < VIEWER_MB, rss_mb
            assert f"at most {cap} viewers, about {VIEWER_MB} MB each" in server.first_line
            for ws in sockets:
                await ws.close()
            assert wait_gone([p.pid for p in apps], 5) is not None
    finally:
        server.stop()


def test_an_app_process_ends_within_a_second_of_its_viewer_whatever_it_does():
    server = start_web(*SIM)
    pids: list[int] = []
    try:
        screens = ("s", "a", "d", None)  # saturation, advisor, a process's details, dashboard
        viewers = [RawViewer(server) for _ in screens]  # their apps start side by side
        assert all(viewer.status == 101 for viewer in viewers)
        assert min(read_together(viewers)) >= 1000  # each app drew
        pids = server.children()
        assert len(pids) == len(screens)
        for viewer, key in zip(viewers, screens):
            if key is not None:
                viewer.press(key)
        for viewer in viewers:
            viewer.drain(0.3)
        os.kill(pids[-1], signal.SIGSTOP)  # one app answers nothing (hung, or stopped)
        for viewer in viewers:
            viewer.vanish()  # reset: no close frame
        took = wait_gone(pids, 3.0)
        assert took is not None and took < 1.5, (took, alive(pids))
        # their places are free again
        again = RawViewer(server)
        assert again.status == 101 and again.read(1000) >= 1000
        again.vanish()
    finally:
        kill_all(pids)
        server.stop()


def test_a_viewer_gone_silent_ends_its_app_within_a_heartbeat():
    # A laptop closed, a network gone: no reset, no close, nothing at all. The server's pings
    # go unanswered (this viewer reads nothing more) and its app is ended within 8 s.
    server = start_web(*SIM)
    pids: list[int] = []
    try:
        viewer = RawViewer(server)
        assert viewer.read(1000) >= 1000
        pids = server.children()
        took = wait_gone(pids, 8.0)
        assert took is not None, alive(pids)
        viewer.vanish()
    finally:
        kill_all(pids)
        server.stop()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=lambda s: s.name)
def test_no_app_process_outlives_its_server(sig):
    server = start_web(*SIM)
    pids: list[int] = []
    try:
        viewers = [RawViewer(server) for _ in range(2)]
        assert min(read_together(viewers)) >= 1000
        viewers[0].press("s")
        viewers[1].press("a")
        pids = server.children()
        assert len(pids) == 2
        server.proc.send_signal(sig)  # SIGKILL: the server cleans up nothing
        took = wait_gone(pids, 5.0)
        assert took is not None and took < 3.0, (took, alive(pids))
        assert server.proc.wait(10) == (-sig if sig == signal.SIGKILL else 0)
        for viewer in viewers:
            viewer.vanish()
    finally:
        kill_all(pids)
        server.stop()


def test_a_viewer_speaking_nonsense_ends_its_app_quietly():
    nonsense = (b"not json", b"[]", b'["stdin", 5]')
    server = start_web(*SIM)
    pids: list[int] = []
    try:
        viewers = [RawViewer(server) for _ in nonsense]
        assert min(read_together(viewers)) >= 1000
        pids = server.children()
        assert len(pids) == len(nonsense)
        for viewer, message in zip(viewers, nonsense):
            viewer._send(0x1, message)
        assert wait_gone(pids, 3.0) is not None, alive(pids)
        for viewer in viewers:
            viewer.vanish()
        assert "Traceback" not in server.output(), server.output()
        again = RawViewer(server)  # and the server serves on
        assert again.read(1000) >= 1000
        again.vanish()
    finally:
        kill_all(pids)
        server.stop()


def test_a_viewer_cannot_make_its_app_grow_without_bound():
    import json

    server = start_web(*SIM)
    pids: list[int] = []
    try:
        viewer = RawViewer(server)
        assert viewer.read(1000) >= 1000
        pids = server.children()
        viewer._send(0x1, json.dumps(["resize", {"width": 20000, "height": 20000}]).encode())
        viewer.drain(2.0)  # unclamped, its app grew by about 100 MB a second
        rss_mb = psutil.Process(pids[0]).memory_info().rss / 2**20
        assert rss_mb < VIEWER_MB, rss_mb
        viewer.vanish()
    finally:
        kill_all(pids)
        server.stop()
