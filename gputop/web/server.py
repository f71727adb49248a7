"""`gputop web`'s server: textual-serve around the same Textual apps, made safe to leave open.

textual-serve starts one app process per browser websocket and checks nobody. Its aiohttp
application is wrapped here, its code unchanged, with:

- a token on every request, on every interface, loopback included (a shared node's other users
  reach 127.0.0.1 too): the page, its static files, the websocket; given once in the URL
  (``?token=…``), then kept in an HttpOnly, SameSite=Strict cookie;
- a websocket from a page of another origin refused (cross-site websocket hijacking);
- no framing by another origin, no Referer carrying the token away;
- a cap on viewers, counted before each one's app process is started and given back when it is
  reaped, with a page saying so when it is reached;
- one process per viewer, exec'd without a shell, niced below the server, ended within about a
  second of its viewer going, and told to end when the server dies (even by SIGKILL);
- every app process ended when the server ends.

Imported only by `gputop.commands.web`, when it runs; Textual itself is not imported here (the
app processes import it).
"""

from __future__ import annotations

import asyncio
import hmac
import html
import os
import shlex
import signal
import sys
import time
from asyncio.subprocess import Process
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from gputop.core.errors import GputopError
from gputop.core.lifeline import dies_with_this_process
from gputop.core.stop_signals import STOP_SIGNALS

TOKEN_COOKIE = "gputop_web_token"
TEMPLATES = Path(__file__).with_name("templates")
CHILD_GRACE_S = 3.0
# A viewer's app is told to quit when its websocket goes; after this long it is sent SIGTERM,
# and after as long again SIGKILL: gone within about a second, whatever it was doing.
APP_QUIT_S = 0.4
# A browser whose network went away sends nothing, not even a close: a ping every this many
# seconds, unanswered for half of it, ends the viewer. Shorter would end viewers on slow links.
HEARTBEAT_S = 4.0
# Apps start with this niceness: eight tabs opening at once import eight Pythons, and the
# server that answers the page (and the "full" page) must not wait behind them.
APP_NICE = 10
# The largest terminal a viewer may ask for, in cells: an 8K screen at a small font. Larger (a
# resize to 20000 x 20000) grew its app by 100 MB a second.
MAX_COLUMNS, MAX_ROWS = 1000, 400
SECURITY_HEADERS = {
    "Content-Security-Policy": "frame-ancestors 'self'",
    "X-Frame-Options": "SAMEORIGIN",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


@dataclass(frozen=True)
class Config:
    host: str  # "" is every address
    port: int
    listen: str  # as given, for messages
    argv: tuple[str, ...]  # one viewer's app process, exec'd as is
    token: str
    max_viewers: int
    title: str


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str


def _same(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def presented_token(query: str | None, cookie: str | None, authorization: str | None,
                    token: str) -> str | None:
    """How the request proved it knows the token: "query", "cookie", "header", or None."""
    if _same(query, token):
        return "query"
    if _same(cookie, token):
        return "cookie"
    if authorization and authorization.startswith("Bearer ") and _same(authorization[7:], token):
        return "header"
    return None


def refusal(*, proof: str | None, host_header: str, origin: str | None,
            websocket: bool) -> Refusal | None:
    """Why a request is refused, or None. Pure: the facts of one request in, a verdict out."""
    if proof is None:
        return Refusal(401, "gputop web: this server needs its token: open the URL that "
                            "`gputop web` printed (…/?token=…)")
    if websocket and origin is not None and urlsplit(origin).netloc.lower() != host_header.lower():
        return Refusal(403, f"gputop web: refused a websocket from a page of {origin}")
    return None


def full_page(max_viewers: int) -> web.Response:
    text = (f"All {max_viewers} viewers of this gputop are in use (each browser tab runs its "
            "own dashboard). Close a tab that shows it, or restart `gputop web` with a larger "
            "--max-viewers, then reload this page.")
    body = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>gputop: viewers full"
            "</title></head><body style='font-family:monospace;background:#0c181f;color:#eee;"
            f"padding:2em'><h1>gputop web: no room</h1><p>{html.escape(text)}</p></body></html>")
    return web.Response(status=503, text=body, content_type="text/html",
                        headers={"Retry-After": "10"})


def terminal_size(width: object, height: object) -> tuple[int, int]:
    """The terminal a viewer asks for, as whole cells within what a screen can show, or
    textual-serve's 80 x 24 for what is not a number: the app would fail on a string and grow
    without bound on a billion columns."""
    return _cells(width, 80, MAX_COLUMNS), _cells(height, 24, MAX_ROWS)


def _cells(value: object, default: int, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
            or value in (float("inf"), float("-inf")):
        return default
    return max(1, min(most, int(value)))


class AppProcess(AppService):
    """textual-serve's AppService for one viewer, started and ended the way a server that is
    left open must:

    - the app is exec'd directly (textual-serve starts ``sh -c COMMAND``: a shell per tab, and a
      parent between the server and the app that no parent-death rule sees through);
    - it is told (``PR_SET_PDEATHSIG``) to stop when the server dies, even by SIGKILL;
    - it runs niced, so that apps starting at once never starve the server's event loop;
    - stopping it is bounded: told to quit, then SIGTERM, then SIGKILL, each after a short
      grace, and reaped. textual-serve waits for the app to close its output, forever if the
      app does not answer.
    """

    def __init__(self, argv: Sequence[str], **kwargs) -> None:
        super().__init__(shlex.join(argv), **kwargs)
        self.argv = tuple(argv)

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._build_environment(width, height),
            preexec_fn=_app_process_setup())
        self._stdin = process.stdin
        return process

    async def set_terminal_size(self, width: object, height: object) -> None:
        await super().set_terminal_size(*terminal_size(width, height))

    async def stop(self) -> None:
        task, self._task = self._task, None
        process = self._process
        if task is None or process is None:
            return
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        try:  # the app's input may be full (an app that reads nothing): never wait on it
            await asyncio.wait_for(self.send_meta({"type": "quit"}), APP_QUIT_S)
        except asyncio.TimeoutError:  # not yet TimeoutError on Python 3.10
            pass
        await end_process(process, APP_QUIT_S)
        # Its output ends with it; what it left unread is dropped, not waited for.
        try:
            await asyncio.wait_for(task, APP_QUIT_S)
        except asyncio.TimeoutError:  # not yet TimeoutError on Python 3.10
            pass


async def end_process(process: Process, grace_s: float) -> None:
    """Wait ``grace_s`` for ``process`` to exit, then SIGTERM it, then SIGKILL it; reaped."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            await asyncio.wait_for(process.wait(), grace_s)
            return
        except asyncio.TimeoutError:  # not yet TimeoutError on Python 3.10
            pass
        try:
            process.send_signal(sig)
        except ProcessLookupError:
            pass
    await process.wait()  # SIGKILL cannot be refused


def _app_process_setup() -> Callable[[], None]:
    """What a viewer's app process does between fork and exec: ask for SIGTERM when the
    server dies (SIGTERM, not SIGKILL: an app in an advisor sweep puts the power limits back),
    and yield the CPU to the server. Python's preexec_fn: it calls nothing that takes a lock,
    and the server's other threads, asyncio's child watchers, hold none while they wait."""
    die_with_server = dies_with_this_process(signal.SIGTERM)

    def setup() -> None:
        die_with_server()
        os.nice(APP_NICE)

    return setup


class GputopServer(Server):
    """textual-serve's Server with gputop's guard, viewer cap and template."""

    def __init__(self, config: Config) -> None:
        super().__init__(shlex.join(config.argv), host=config.host or "0.0.0.0",
                         port=config.port, title=config.title, templates_path=TEMPLATES)
        self.config = config
        self.viewers = 0  # app processes started and not yet reaped

    async def on_startup(self, app: web.Application) -> None:
        """textual-serve prints a banner here; `gputop web` prints its one line itself."""

    async def handle_index(self, request: web.Request):
        if self.viewers >= self.config.max_viewers:
            return full_page(self.config.max_viewers)
        # The page's own URLs name the host the browser used (an ssh -L port, a node's name),
        # not the listen address (0.0.0.0 means nothing to a browser). No await happens between
        # this and the template's use of it.
        self.public_url = f"{request.scheme}://{request.host}"
        return await super().handle_index(request)

    async def handle_websocket(self, request: web.Request):
        """One viewer: its place counted before its app process is started, and given back
        only once that process is reaped, so that the cap counts processes."""
        if self.viewers >= self.config.max_viewers:
            return full_page(self.config.max_viewers)
        self.viewers += 1  # no await since the check: two tabs cannot both take the last place
        try:
            return await self._view(request)
        finally:
            self.viewers -= 1

    async def _view(self, request: web.Request) -> web.WebSocketResponse:
        websocket = web.WebSocketResponse(heartbeat=HEARTBEAT_S)
        await websocket.prepare(request)
        app = AppProcess(self.config.argv, write_bytes=websocket.send_bytes,
                         write_str=websocket.send_str, close=websocket.close,
                         download_manager=self.download_manager)
        try:
            await app.start(*terminal_size(to_int(request.query.get("width", "80"), 80),
                                           to_int(request.query.get("height", "24"), 24)))
            await self._process_messages(websocket, app)
        except (ConnectionError, asyncio.CancelledError):
            pass  # the viewer went, or the server ends
        except OSError as exc:  # no process could be started (fork: out of memory, PIDs)
            print(f"gputop web: cannot start a viewer's app: {exc.strerror or exc}",
                  file=sys.stderr, flush=True)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, AssertionError):
            pass  # the viewer sent what is not textual.js's protocol: it is gone, quietly
        finally:
            await app.stop()
            await websocket.close()
        return websocket

    @web.middleware
    async def guard(self, request: web.Request, handler):
        token = self.config.token
        proof = presented_token(request.query.get("token"), request.cookies.get(TOKEN_COOKIE),
                                request.headers.get("Authorization"), token)
        refused = refusal(proof=proof, host_header=request.host,
                          origin=request.headers.get("Origin"),
                          websocket=request.headers.get("Upgrade", "").lower() == "websocket")
        if refused is not None:
            return web.Response(status=refused.status, text=refused.message + "\n")
        if proof == "query" and request.path == "/":
            # Keep the token in a cookie and out of the address bar (and of screenshots of it).
            rest = request.query.copy()  # type: ignore[attr-defined]  # a MultiDict at run time
            rest.popall("token")
            location = str(request.rel_url.with_query(rest))
            response = web.Response(status=303, headers={"Location": location})
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict", path="/")
            return response
        return await handler(request)


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)


def end_children(grace_s: float = CHILD_GRACE_S) -> None:
    """End the app processes that outlived their websockets: SIGTERM, then SIGKILL, by PID."""
    import psutil

    children = psutil.Process().children(recursive=True)
    for child in children:
        try:
            child.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(children, timeout=grace_s)
    for child in alive:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=grace_s)


async def _serve(config: Config, announce: Callable[[int], None]) -> None:
    server = GputopServer(config)
    app = await server._make_app()
    app.middlewares.append(server.guard)
    app.on_response_prepare.append(add_security_headers)
    # Open websockets are cancelled after this long at shutdown; each one's app process is
    # told to quit as its handler unwinds, and end_children() catches any that does not.
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, config.host or None, config.port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        reason = os.strerror(exc.errno) if exc.errno else str(exc)  # asyncio's own is long
        raise GputopError(f"web: cannot listen on {config.listen}: {reason}") from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    caught = []
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup gputop web &: stays up
            loop.add_signal_handler(sig, stop.set)
            caught.append(sig)
    announce(runner.addresses[0][1])
    try:
        await stop.wait()
    finally:
        for sig in caught:
            loop.remove_signal_handler(sig)
        started = time.monotonic()
        await runner.cleanup()
        await asyncio.to_thread(end_children, max(0.5, CHILD_GRACE_S - (time.monotonic() - started)))


def serve(config: Config, announce: Callable[[int], None]) -> int:
    """Serve until SIGINT, SIGTERM or SIGHUP; exit status 0."""
    asyncio.run(_serve(config, announce))
    return 0
