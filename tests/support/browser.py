"""A real headless Chromium, driven over its DevTools protocol, for the web view's tests.

Started on 127.0.0.1 with a port of its own choosing (read from DevToolsActivePort in a fresh
profile folder), stopped by PID. The terminal's text is read from xterm.js's own buffer:
textual-serve draws on a canvas, so the DOM holds no text, and its Terminal object is not
global. A script run before the page's own catches it as textual.js stores it
(``this.terminal = new Terminal(…)``) — in the test browser only; the served page is unchanged.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import aiohttp

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

CATCH_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  set(value) {
    Object.defineProperty(this, "terminal", {value, writable: true, configurable: true,
                                             enumerable: true});
    if (value && value.buffer) { (window.__terminals = window.__terminals || []).push(value); }
  },
});
"""

SCREEN_TEXT = """(() => {
  const t = (window.__terminals || [])[0];
  if (!t) return null;
  const b = t.buffer.active, lines = [];
  for (let y = 0; y < t.rows; y++) { const l = b.getLine(b.viewportY + y);
                                     lines.push(l ? l.translateToString(true) : ""); }
  return lines.join("\\n");
})()"""

# key -> (key, code, windowsVirtualKeyCode) for Input.dispatchKeyEvent
KEYS = {c: (c, f"Key{c.upper()}", ord(c.upper())) for c in "abcdefghijklmnopqrstuvwxyz"}
KEYS.update({c: (c, f"Key{c}", ord(c)) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"})
KEYS["Escape"] = ("Escape", "Escape", 27)
KEYS["?"] = ("?", "Slash", 191)
KEYS["Enter"] = ("Enter", "Enter", 13)


class BrowserError(RuntimeError):
    pass


class Chromium:
    """``async with Chromium() as browser: page = await browser.page(url)``."""

    def __init__(self, width: int = 1280, height: int = 800) -> None:
        self.width, self.height = width, height
        self.profile = Path(tempfile.mkdtemp(prefix="gputop-chromium-"))
        self.proc: subprocess.Popen | None = None
        self.session: aiohttp.ClientSession | None = None
        self.ws = None
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future] = {}
        self.reader: asyncio.Task | None = None

    async def __aenter__(self) -> Chromium:
        if CHROMIUM is None:
            raise BrowserError("chromium is not installed (scripts/install-test-deps.sh installs it)")
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-sync",
             "--disable-background-networking", "--disable-component-update",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", f"--window-size={self.width},{self.height}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                await self.__aexit__(None, None, None)
                raise BrowserError("chromium did not open its DevTools port")
            await asyncio.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self.session = aiohttp.ClientSession()
        self.ws = await self.session.ws_connect(f"ws://127.0.0.1:{port}{path}", max_msg_size=0)
        self.reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc) -> None:
        if self.reader is not None:
            self.reader.cancel()
        if self.ws is not None:
            await self.ws.close()
        if self.session is not None:
            await self.session.close()
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its own session: the renderers too
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)

    async def _read(self) -> None:
        async for message in self.ws:
            data = json.loads(message.data)
            future = self.pending.pop(data.get("id"), None)
            if future is not None and not future.done():
                future.set_result(data)

    async def send(self, method: str, params: dict | None = None,
                   session_id: str | None = None) -> dict:
        call_id = next(self.ids)
        message = {"id": call_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        future = asyncio.get_running_loop().create_future()
        self.pending[call_id] = future
        await self.ws.send_str(json.dumps(message))
        answer = await asyncio.wait_for(future, 30)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        return answer["result"]

    async def page(self, url: str) -> Page:
        target = await self.send("Target.createTarget", {"url": "about:blank"})
        attached = await self.send("Target.attachToTarget",
                                   {"targetId": target["targetId"], "flatten": True})
        page = Page(self, attached["sessionId"])
        await page.send("Page.enable")
        await page.send("Runtime.enable")
        await page.send("Emulation.setDeviceMetricsOverride",
                        {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                         "mobile": False})
        await page.send("Page.addScriptToEvaluateOnNewDocument", {"source": CATCH_TERMINAL})
        await page.send("Page.navigate", {"url": url})
        return page


class Page:
    def __init__(self, browser: Chromium, session_id: str) -> None:
        self.browser, self.session_id = browser, session_id

    async def send(self, method: str, params: dict | None = None) -> dict:
        return await self.browser.send(method, params, self.session_id)

    async def evaluate(self, expression: str):
        result = await self.send("Runtime.evaluate",
                                 {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:60]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def screen(self) -> str:
        """The terminal's text as xterm.js holds it, one line per row ("" before it exists)."""
        return await self.evaluate(SCREEN_TEXT) or ""

    async def wait_for_text(self, *needles: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = await self.screen()
            if all(n in text for n in needles):
                return text
            await asyncio.sleep(0.2)
        raise BrowserError(f"not on the page after {timeout} s: {needles}; it shows:\n{text}")

    async def press(self, key: str) -> None:
        """A real key press, through the browser's input pipeline into xterm.js."""
        await self.evaluate("document.querySelector('.xterm-helper-textarea').focus()")
        name, code, vk = KEYS[key]
        text = name if len(name) == 1 else "\r" if name == "Enter" else ""
        common = {"key": name, "code": code, "windowsVirtualKeyCode": vk,
                  "nativeVirtualKeyCode": vk}
        if name.isupper() or name == "?":
            common["modifiers"] = 8  # shift
        await self.send("Input.dispatchKeyEvent", {"type": "keyDown", "text": text, **common})
        await self.send("Input.dispatchKeyEvent", {"type": "keyUp", **common})

    async def screenshot(self) -> bytes:
        shot = await self.send("Page.captureScreenshot", {"format": "png"})
        return base64.b64decode(shot["data"])

    async def body_text(self) -> str:
        return await self.evaluate("document.body ? document.body.innerText : ''") or ""

    async def wait_for_body(self, needle: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = await self.body_text()
            if needle in text:
                return text
            await asyncio.sleep(0.2)
        raise BrowserError(f"{needle!r} not on the page after {timeout} s; it shows:\n{text}")

    async def close(self) -> None:
        await self.send("Page.close")
