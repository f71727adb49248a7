"""The Xid events screen (`x`, #29): every Xid seen, newest first, with its meaning, the job it
hit and what to do; listed in the help; closed by x, esc or q."""

from __future__ import annotations

from gputop.tui.screens.modals import HelpScreen
from gputop.tui.screens.xid_events import XidEventsScreen
from tests.support.demo import advance
from tests.support.tui import make_app, screen_text, settle


async def test_x_lists_the_xids_seen_newest_first_with_whom_they_hit_and_what_to_do():
    app = make_app("xid-thermal")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, XidEventsScreen)
        assert "No Xid error seen since gputop started." in screen_text(app)
        advance(app, 45)  # the screen follows the samples while open
        await settle(pilot)
        text = screen_text(app)
        assert text.index("Xid 13  Graphics Engine Exception") \
            < text.index("Xid 79  GPU has fallen off the bus")
        assert "GPU 1  Xid 79" in text and "(alice)" in text
        assert "do:  drain the node and reboot it" in text
        assert "do:  restart the job" in text and "(bob)" in text
        assert "NVIDIA's Xid catalog (R575)" in text
        await pilot.press("x")
        await settle(pilot)
        assert not isinstance(app.screen, XidEventsScreen)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        assert ("x", "Xid errors seen: meaning, the job each hit, what to do") in app.screen.rows
