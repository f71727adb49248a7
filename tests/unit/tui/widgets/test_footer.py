"""The footer: rebuilt only when the keys it shows change (#26: Textual's rebuilt all its key
widgets, and laid the screen out again, on every focus change and every screen shown)."""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from gputop.tui.screens.process_view import ProcessView
from tests.support.demo import advance
from tests.support.tui import make_app, screen_text, settle


async def test_back_on_the_dashboard_its_footer_is_not_rebuilt():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        dashboard = app.screen
        shown = list(dashboard.query(FooterKey))
        assert shown
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ProcessView)
        await pilot.press("q")
        await settle(pilot)
        assert app.screen is dashboard
        assert list(dashboard.query(FooterKey)) == shown  # the same widgets, not new ones
        assert "/ filter" in screen_text(app).splitlines()[-1]


async def test_each_screen_shows_its_own_keys():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "back" in footer and "/ filter" not in footer
        await pilot.press("q")
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "/ filter" in footer and "back" not in footer
