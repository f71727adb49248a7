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


async def test_a_screen_opened_the_first_time_has_its_keys_from_its_first_compose(monkeypatch):
    """#26: Textual's footer composed empty on a new screen and rebuilt after its first frame:
    the process view's keys came 40-50 ms after the view itself."""
    from gputop.tui.widgets.footer import KeyFooter

    rebuilds: list[KeyFooter] = []
    real = KeyFooter.recompose

    async def counted(self):
        rebuilds.append(self)
        await real(self)

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        monkeypatch.setattr(KeyFooter, "recompose", counted)
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ProcessView)
        assert "back" in screen_text(app).splitlines()[-1]
        assert rebuilds == []
