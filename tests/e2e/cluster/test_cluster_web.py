"""The SSH cluster view served by `gputop web`, in a real headless Chromium: two loopback nodes
of the ssh lab come up, enter opens a node's dashboard, keys work as in the terminal."""

from __future__ import annotations

import pytest

from tests.support.browser import CHROMIUM, Chromium
from tests.support.ssh_harness import toml_hosts
from tests.support.web_server import gone, start_web

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed: "
                                "apt-get install chromium (scripts/install-test-deps.sh installs it)")


async def test_the_ssh_cluster_view_in_chromium(lab, tmp_path):
    hosts = toml_hosts(tmp_path / "hosts.toml",
                       [(name, lab.command(name)) for name in ("node-a", "node-b")])
    server = start_web("--", "cluster", "--hosts", str(hosts), "--ssh-config",
                       str(lab.ssh_config), "--interval", "0.5")
    try:
        async with Chromium(1280, 800) as browser:
            page = await browser.page(server.with_token())
            await page.wait_for_text("2 nodes, 2 ok", timeout=60)
            await page.press("t")
            await page.wait_for_text("theme: light")
            await page.press("Enter")  # the node under the cursor, in a dashboard of its own
            text = await page.wait_for_text("H100 80GB HBM3", "UTIL")
            assert text.startswith("gputop node-a") or "node-b ok" in text, text
            # the viewer's app process and its ssh sessions to the nodes
            started = server.children()
            assert len(started) >= 3
    finally:
        assert server.stop() == 0
    assert gone(started), "an app process or an ssh session outlived the server"
