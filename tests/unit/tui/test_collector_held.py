"""The cyclic garbage collector waits while a screen is pushed and drawn (#26): a first open
builds thousands of objects that live on, and the collector's passes over them came between
the key and the screen."""

from __future__ import annotations

import gc

from gputop.tui.screens.saturation import SaturationScreen
from gputop.tui.widgets.saturation import GpuSaturation
from tests.support.demo import advance
from tests.support.tui import make_app, settle


def drawn(app) -> bool:
    """Whether the saturation panel is on screen with every block drawn."""
    blocks = app.screen.query(GpuSaturation) if isinstance(app.screen, SaturationScreen) else []
    return bool(blocks) and all(block._drawn is not None for block in blocks)


async def test_no_collection_runs_from_the_push_to_the_screen_drawn():
    app = make_app()
    seen: list[bool] = []  # at each collection: whether the panel was drawn

    def record(phase: str, info: dict) -> None:
        if phase == "start":
            seen.append(drawn(app))

    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 3)
        await settle(pilot)
        assert gc.isenabled()
        gc.callbacks.append(record)
        try:
            app.action_saturation()  # the panel's first open: its widgets, styles, first draw
            assert not gc.isenabled()
            await settle(pilot)
            await pilot.pause(0.05)
            assert drawn(app) and gc.isenabled()
            garbage = [[] for _ in range(gc.get_threshold()[0] + 1)]  # the young ones fill up
            del garbage
        finally:
            gc.callbacks.remove(record)
    assert seen and all(seen), seen  # it ran again, and only once the panel was drawn


async def test_an_app_that_ends_before_the_frame_gives_the_collector_back():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.action_saturation()
        assert not gc.isenabled()
        app.exit()
    assert gc.isenabled()
