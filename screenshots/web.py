"""Regenerate screenshots/web-dashboard.png: `gputop web` on the simulator, in headless Chromium.

    python screenshots/web.py

The browser view draws the same Textual app as the terminal (screenshots/make.py's SVGs); this
picture shows it as a browser does, through textual-serve and xterm.js. It uses the browser the
tests drive (tests/support/browser.py): Debian's `chromium`, started on 127.0.0.1, stopped by PID.
Unlike the SVGs it is taken from a live simulator, so it differs from run to run in its numbers.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.support.browser import CHROMIUM, Chromium  # noqa: E402
from tests.support.web_server import start_web  # noqa: E402

OUT = HERE / "web-dashboard.png"


async def shoot() -> bytes:
    server = start_web("--backend", "sim", "--seed", "0", "--scenario", "training")
    try:
        async with Chromium(1280, 800) as browser:
            page = await browser.page(server.with_token())
            await page.wait_for_text("SIMULATED", "8 GPUs", "GPU▲")
            await asyncio.sleep(5)  # a few samples, so the sparklines have something to show
            return await page.screenshot()
    finally:
        server.stop()


def main() -> int:
    if CHROMIUM is None:
        print("screenshots/web.py: chromium is not installed (apt-get install chromium)",
              file=sys.stderr)
        return 1
    OUT.write_bytes(asyncio.run(shoot()))
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
