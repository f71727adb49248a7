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


async def test_a_job_whose_last_process_left_is_told_with_its_accounting():
    from dataclasses import replace

    app = GputopApp(demo_backend("training"), autostart=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        first = app.sampler.tick()
        assert first is not None and app.waste is not None
        await pilot.pause(0.1)
        assert any(d.processes for d in first.devices)
        empty = replace(first, time=first.time + 2.0,
                        devices=tuple(replace(d, processes=()) for d in first.devices))
        app.waste.add(empty)
        app.show_snapshot(empty)
        await pilot.pause(0.3)
        shown = [str(toast.render()) for toast in app.screen.query("Toast")]
        assert any("ended after" in text and "GPU-h" in text for text in shown), shown
