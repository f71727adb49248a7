"""A real `gputop web --backend sim` spoken to over HTTP and websockets on 127.0.0.1: the token,
the headers, the viewer cap, and every app process gone when its viewer or the server is."""

from __future__ import annotations

import asyncio
import socket
import time

import aiohttp
import psutil
import pytest

from tests.support.paths import gputop_cmd
from tests.support.web_server import gone, start_web, viewer_session

SIM = ("--backend", "sim", "--interval", "1")


async def first_bytes(ws, timeout: float = 30.0) -> bytes:
    """Wait until the viewer's app has drawn something."""
    deadline = time.monotonic() + timeout
    data = b""
    while len(data) < 1000 and time.monotonic() < deadline:
        message = await ws.receive(timeout=deadline - time.monotonic())
        if message.type == aiohttp.WSMsgType.BINARY:
            data += message.data
        elif message.type != aiohttp.WSMsgType.TEXT:
            break
    return data


def assert_not_frameable(response) -> None:
    assert response.headers["Content-Security-Policy"] == "frame-ancestors 'self'"
    assert response.headers["X-Frame-Options"] == "SAMEORIGIN"
    assert response.headers["Referrer-Policy"] == "no-referrer"


@pytest.fixture
def beyond_loopback():
    """Listening on every address (the test connects to 127.0.0.1 only); no token file."""
    server = start_web(*SIM, "--listen", "0.0.0.0:0")
    yield server
    server.stop()


async def test_beyond_loopback_every_request_needs_the_token(beyond_loopback):
    server = beyond_loopback
    token = server.token
    assert token and len(token) >= 32, server.first_line  # generated, printed once
    base = server.url
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        for path in ("", "static/js/textual.js", "static/css/xterm.css", "download/x",
                     "ws?width=80&height=24", f"?token={token[:-1]}"):
            async with http.get(base + path, allow_redirects=False) as r:
                assert r.status == 401, path
                assert "token" in await r.text()
                assert_not_frameable(r)
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(base + "ws?width=80&height=24")
        assert refused.value.status == 401
        assert server.children() == []  # no app process was started for anyone
        # The URL's token: kept in a cookie, and the address bar cleaned of it.
        async with http.get(f"{base}?token={token}&fontsize=14", allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"] == "/?fontsize=14"
            cookie = r.cookies["gputop_web_token"]
            assert cookie.value == token and cookie["httponly"] and \
                cookie["samesite"] == "Strict"
        async with http.get(base) as r:
            assert r.status == 200 and "textual.js" in await r.text()
            assert_not_frameable(r)
        async with http.get(base + "static/js/textual.js") as r:
            assert r.status == 200
        async with http.ws_connect(base + "ws?width=120&height=40") as ws:
            assert b"H100" in await first_bytes(ws)
    async with aiohttp.ClientSession() as script:  # a script: the token in a header
        async with script.get(base, headers={"Authorization": f"Bearer {token}"}) as r:
            assert r.status == 200


async def test_a_token_file_is_honoured_and_never_printed(tmp_path):
    path = tmp_path / "token"
    path.write_text("a-token-from-a-file-0123\n")
    server = start_web(*SIM, "--token-file", str(path))
    try:
        assert server.token is None and str(path) in server.first_line  # where it is, not it
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.get(server.url) as r:
                assert r.status == 401
            async with http.get(server.url + "?token=a-token-from-a-file-0123") as r:
                assert r.status == 200  # followed the redirect with the cookie
    finally:
        server.stop()
    assert "a-token-from-a-file-0123" not in server.output()


async def test_loopback_asks_for_the_token_too():
    # Every user of a shared node reaches 127.0.0.1: loopback is no proof of who asks.
    server = start_web(*SIM)
    try:
        token = server.token
        assert token and len(token) >= 32, server.first_line
        assert "ssh -L" in server.output()
        assert server.output().count(token) == 1  # printed once, in the URL
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            for path in ("", "static/js/textual.js", "ws?width=80&height=24"):
                async with http.get(server.url + path, allow_redirects=False) as r:
                    assert r.status == 401, path
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(server.url + "ws")
            assert refused.value.status == 401
            assert server.children() == []  # no app process was started for anyone
            async with http.get(server.with_token()) as r:
                assert r.status == 200 and "textual.js" in await r.text()
                assert_not_frameable(r)
            # the cookie is there, but the page that opens the websocket is another site's
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(server.url + "ws", origin="http://evil.example")
            assert refused.value.status == 403
            assert server.children() == []
    finally:
        server.stop()


async def test_viewer_cap_and_no_app_process_outlives_its_viewer():
    server = start_web(*SIM, "--max-viewers", "1")
    try:
        async with viewer_session() as http:
            ws = await http.ws_connect(server.with_token("ws?width=100&height=30"))
            assert b"GPU" in await first_bytes(ws)
            viewers = server.children()
            assert viewers, "one app process per viewer"
            command = " ".join(psutil.Process(viewers[-1]).cmdline())
            assert "--readonly" in command  # signals off in the web view
            async with http.get(server.with_token()) as r:
                assert r.status == 503
                assert "All 1 viewers of this gputop are in use" in await r.text()
                assert_not_frameable(r)
            with pytest.raises(aiohttp.WSServerHandshakeError) as full:
                await http.ws_connect(server.with_token("ws"))
            assert full.value.status == 503
            assert server.children() == viewers  # the refused one started nothing
            await ws.close()  # the tab closes
            assert gone(viewers), "the app process outlived its viewer"
            async with http.get(server.with_token()) as r:
                assert r.status == 200  # its place is free again
    finally:
        server.stop()


async def test_stopping_the_server_ends_every_app_process():
    server = start_web(*SIM)
    try:
        async with viewer_session() as http:
            sockets = [await http.ws_connect(server.with_token("ws?width=80&height=24"))
                       for _ in range(2)]
            for ws in sockets:
                await first_bytes(ws)
            viewers = server.children()
            assert len(viewers) >= 2
            started = time.monotonic()
            code = await asyncio.to_thread(server.stop)
            assert code == 0 and time.monotonic() - started < 10
            assert gone(viewers, timeout=1), "app processes left behind"
    finally:
        server.stop()  # a no-op once stopped; on a failure above, no server is left running


def test_port_in_use_is_one_line_exit_1():
    import subprocess

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = subprocess.run(gputop_cmd("web", *SIM, "--listen", f"127.0.0.1:{port}"),
                           capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r.stderr
    assert r.stderr == (f"gputop: web: cannot listen on 127.0.0.1:{port}: "
                        "Address already in use\n"), r.stderr
