"""What the GPU panel asks Textual to redraw on a tick (#26): whole lines of the cards that
changed. Textual keeps each region it is handed in caches of a thousand and more entries; the
cell spans of the digits that moved were all different, and filled them (1.4 MB with the
history full at 8 GPUs)."""

from __future__ import annotations

from gputop.tui.app import GputopApp
from gputop.tui.text.wants import DASHBOARD
from gputop.tui.widgets.gpu import GpuPanel
from tests.support.demo import demo_backend
from tests.support.tui import settle


async def test_a_tick_redraws_whole_card_lines_from_a_bounded_set():
    backend = demo_backend("training")
    app = GputopApp(backend, autostart=False, first=backend.sample(wants=DASHBOARD))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        panel = app.query_one(GpuPanel)
        asked: list = []
        refresh = panel.refresh

        def record(*regions, **kwargs):
            asked.extend(regions)
            return refresh(*regions, **kwargs)

        panel.refresh = record
        for _ in range(40):
            app.sampler.tick()
            await settle(pilot)
        card_width = panel.card_width(panel.size.width)
        lines = {(panel.place(i, card_width)[0], panel.place(i, card_width)[1] + y)
                 for i, card in panel.cards.items() for y in range(card.height())}
        assert asked, "no tick changed a card"
        assert {(r.width, r.height) for r in asked} == {(card_width, 1)}
        assert {(r.x, r.y) for r in asked} <= lines  # no scroll here: a card line is a row
