"""Cost of one saturation-panel update (8 and 16 GPUs): update_snapshot plus the repaint.

Runs the panel headless (Textual's test driver) on simulator snapshots and prints the median
milliseconds per tick, next to the analyzer's own per-tick cost measured in the same run.
Run: python bench/saturation_panel.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

from textual.app import App, ComposeResult  # noqa: E402

from gputop.analysis.pipeline import default_analyzer  # noqa: E402
from gputop.backends.base import BackendOptions  # noqa: E402
from gputop.backends.sim.backend import SimBackend  # noqa: E402
from gputop.core.model import Snapshot  # noqa: E402
from gputop.sampler import Sampler  # noqa: E402
from gputop.tui.widgets.saturation import SaturationPanel  # noqa: E402

TICKS = 60


class PanelApp(App):
    def compose(self) -> ComposeResult:
        yield SaturationPanel()


def snapshots(scenario: str):
    backend = SimBackend(BackendOptions(scenario=scenario, sim_speed=1e7))
    backend.open()
    sampler = Sampler(backend, analyze=default_analyzer())
    taken: list[Snapshot] = []
    sampler.subscribe(taken.append)
    sampler.run_for(600)
    hist = sampler.history
    analyze = default_analyzer()
    t0 = time.perf_counter()
    for _ in range(20):
        analyze(hist)
    analyzer_ms = 1000 * (time.perf_counter() - t0) / 20
    backend.close()
    return sampler, hist, taken, analyzer_ms


async def measure(scenario: str) -> None:
    sampler, hist, taken, analyzer_ms = snapshots(scenario)
    app = PanelApp()
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(SaturationPanel)
        panel.update_snapshot(sampler.latest, hist)
        await pilot.pause()
        update, render = [], []
        cards = list(panel.cards.values())
        for snap in taken[-TICKS:]:
            t0 = time.perf_counter()
            panel.update_snapshot(snap, hist)
            t1 = time.perf_counter()
            for card in cards:  # what the repaint asks of the widgets: their text
                card.render()
            t2 = time.perf_counter()
            await pilot.pause()
            update.append(t1 - t0)
            render.append(t2 - t1)
    gpus = len(taken[-1].devices)
    print(f"{scenario:12} {gpus:2d} GPUs: update_snapshot {1000 * statistics.median(update):5.2f} ms,"
          f" render all blocks {1000 * statistics.median(render):5.2f} ms per tick;"
          f" analyzer {analyzer_ms:5.2f} ms per tick (600-snapshot history)")


def main() -> None:
    for scenario in ("straggler", "dense-16"):
        asyncio.run(measure(scenario))


if __name__ == "__main__":
    main()
