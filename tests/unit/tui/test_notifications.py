"""Notifications are plain text: they carry names and paths that others chose."""

from __future__ import annotations

from gputop.tui.app import GputopApp
from tests.support.demo import demo_backend


async def test_a_notification_holding_markup_shows_it_as_text_and_does_not_act_on_it():
    app = GputopApp(demo_backend("training"), autostart=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        app.notify("not signalling [@click=app.quit]job[/]: [b]refused[/b]", severity="error")
        await pilot.pause(0.3)
        shown = [str(toast.render()) for toast in app.screen.query("Toast")]
        assert any("[@click=app.quit]job[/]: [b]refused[/b]" in text for text in shown), shown
