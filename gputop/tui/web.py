"""`gputop web`'s server: textual-serve around the same Textual apps, made safe to leave open.

textual-serve starts one app process per browser websocket and checks nobody. Its aiohttp
application is wrapped here, its code unchanged, with:

- a token on every request, on every interface, loopback included (a shared node's other users
  reach 127.0.0.1 too): the page, its static files, the websocket; given once in the URL
  (``?token=…``), then kept in an HttpOnly, SameSite=Strict cookie;
- a websocket from a page of another origin refused (cross-site websocket hijacking);
- no framing by another origin, no Referer carrying the token away;
- a cap on viewers (app processes), with a page saying so when it is reached;
- every app process ended when the server ends.

Imported only by `gputop.commands.web`, when it runs; Textual itself is not imported here (the
app processes import it).
"""

from __future__ import annotations

import asyncio
import hmac
import html
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.server import Server

from gputop.errors import GputopError
from gputop.stop_signals import STOP_SIGNALS

TOKEN_COOKIE = "gputop_web_token"
TEMPLATES = Path(__file__).with_name("web_templates")
CHILD_GRACE_S = 3.0
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
    command: str  # the shell command line of one viewer's app process
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


class GputopServer(Server):
    """textual-serve's Server with gputop's guard, viewer cap and template."""

    def __init__(self, config: Config) -> None:
        super().__init__(config.command, host=config.host or "0.0.0.0", port=config.port,
                         title=config.title, templates_path=TEMPLATES)
        self.config = config
        self.viewers = 0

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
        if self.viewers >= self.config.max_viewers:
            return full_page(self.config.max_viewers)
        self.viewers += 1  # no await since the check: two tabs cannot both take the last place
        try:
            return await super().handle_websocket(request)
        finally:
            self.viewers -= 1

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
            rest = request.query.copy()
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
