"""`gputop web --backend sim` in a real headless Chromium: the page loads, the app draws the GPU
cards, keys typed into the page change the view, the token and the viewer cap hold.

The screen's text is read from xterm.js's buffer (see tests/support/browser.py): what the canvas
draws. Everything runs on 127.0.0.1, on ports the kernel picks; every process is stopped by PID.
"""

from __future__ import annotations

import re
import struct

import pytest

from tests.support.browser import CHROMIUM, Chromium
from tests.support.web_server import start_web

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed: "
                                "apt-get install chromium (scripts/install-test-deps.sh installs it)")

SIM = ("--backend", "sim", "--seed", "0", "--interval", "0.5")
CARD_TITLE = re.compile(r"^\s*\d+ H100 80GB HBM3\s", re.M)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def gpu_cards(text: str) -> int:
    return sum(len(CARD_TITLE.findall(line)) for line in text.splitlines())


async def test_the_dashboard_in_chromium_draws_the_cards_and_answers_keys():
    server = start_web(*SIM)
    try:
        async with Chromium(1280, 800) as browser:
            page = await browser.page(server.with_token())
            text = await page.wait_for_text("SIMULATED", "8 GPUs", "GPU▲")
            assert len(re.findall(r"\d+ H100 80GB HBM3", text)) == 8, text  # every card
            assert "SM act" in text and "python train.py" in text
            shot = await page.screenshot()
            assert png_size(shot) == (1280, 800) and len(shot) > 20_000
            # theme, as in the terminal
            assert "theme: light" not in text
            await page.press("t")
            await page.wait_for_text("theme: light")
            # sort by SM% (shift+S): the arrow moves from GPU to SM%
            await page.press("S")
            text = await page.wait_for_text("SM%▼")
            assert "GPU▲" not in text
            # the saturation panel
            await page.press("s")
            await page.wait_for_text("Saturation: how busy the GPUs really are", "SM active")
    finally:
        assert server.stop() == 0


async def test_signals_are_off_in_the_web_view_unless_allowed():
    readonly = start_web(*SIM)
    allowed = start_web(*SIM, "--allow-signals")
    try:
        # tall enough for the whole help: the k row comes after every other key's
        async with Chromium(1280, 1300) as browser:
            for server, listed in ((readonly, False), (allowed, True)):
                page = await browser.page(server.with_token())
                await page.wait_for_text("GPU▲")
                await page.press("?")
                text = await page.wait_for_text("next theme")
                assert ("send SIGTERM" in text) is listed, text
                await page.close()
    finally:
        readonly.stop()
        allowed.stop()


async def test_beyond_loopback_the_browser_needs_the_token_and_the_cap_holds():
    server = start_web(*SIM, "--listen", "0.0.0.0:0", "--max-viewers", "1")
    try:
        async with Chromium() as browser:
            refused = await browser.page(server.url)
            await refused.wait_for_body("needs its token")
            assert await refused.screen() == ""  # no terminal, no app process
            assert server.children() == []
            page = await browser.page(server.with_token())
            await page.wait_for_text("SIMULATED", "GPU▲")  # websocket opened with the cookie
            assert server.token not in await page.evaluate("location.href")
            second = await browser.page(server.url)  # the cookie is there: the cap answers
            await second.wait_for_body("All 1 viewers of this gputop are in use")
    finally:
        server.stop()
