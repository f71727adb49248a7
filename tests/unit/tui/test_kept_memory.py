"""What the dashboard holds does not grow with the hours it runs (#26)."""

from __future__ import annotations

from rich.cells import cached_cell_len

from gputop.tui import shell
from tests.support.demo import advance
from tests.support.tui import make_app, settle


async def test_the_strings_rich_measured_are_forgotten_every_few_seconds(monkeypatch):
    # Textual measures every run of a line it crops or divides, and Rich keeps each answer (up
    # to 4096): lines drawn once, a MB held a few minutes into a dashboard
    monkeypatch.setattr(shell, "MEASURES_KEPT_S", 0.2)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        for n in range(500):
            cached_cell_len(f"a line drawn once, at tick {n}")
        assert cached_cell_len.cache_info().currsize >= 500
        await pilot.pause(0.5)
        assert cached_cell_len.cache_info().currsize < 500
