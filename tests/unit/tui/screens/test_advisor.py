"""The advisor screen as the dashboard opens it (key `a`): built once, shown again as new.

Its sweeps, restores and passive view are tested in tests/unit/advisor/test_advisor_screen.py."""

from __future__ import annotations

from gputop.tui.screens.advisor import AdvisorScreen
from gputop.tui.text.wants import DASHBOARD
from tests.support.demo import advance
from tests.support.tui import make_app, screen_text, settle


async def test_the_advisor_is_built_once_and_each_open_shows_it_as_new():
    """#26: each `a` built the screen, its widgets and their CSS anew (82-95 ms at 8x32); it is
    kept, and each open starts where a new one would: the status line a key left is gone, the
    sampler reads everything only while the screen shows."""
    app = make_app(readonly=True)
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 3)
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        first = app.screen
        assert isinstance(first, AdvisorScreen)
        assert app.sampler.wants is None  # power and energy on every tick: everything
        await pilot.press("s")  # refused in a read-only session, in red on the status line
        await settle(pilot)
        assert "sweeps change power limits and are disabled" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, AdvisorScreen)
        assert app.sampler.wants == DASHBOARD  # closed, it reads nothing more
        await pilot.press("a")
        await settle(pilot)
        assert app.screen is first  # shown again, not built again
        text = screen_text(app)
        assert "passive view (read-only session: no sweeps)" in text
        assert "are disabled" not in text
        assert app.sampler.wants is None
