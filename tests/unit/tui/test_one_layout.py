"""One layout from the first frame (#26): the header, host line, hint bar, GPU cards and process
table keep their rows whatever arrives later, and a frame drawn at a size has the cards laid out
for that size. Before, the host line came a second after launch and the hint bar with the first
hint, each pushing everything under it down a row, and the frame after a resize (the first frame
too) showed the cards laid out for the size before."""

from __future__ import annotations

import re
from dataclasses import replace

from gputop.core.model import Hint
from gputop.tui.app import GputopApp
from gputop.tui.text.wants import DASHBOARD
from gputop.tui.widgets.dashboard import DashboardView
from gputop.tui.widgets.gpu import GpuPanel
from gputop.tui.widgets.hintbar import HintBar
from gputop.tui.widgets.hostline import HostLine
from gputop.tui.widgets.processes import ProcessTable
from tests.support.demo import demo_backend, recorded_replay
from tests.support.tui import make_app, screen_lines, settle

HINT = Hint(device=3, code="straggler", severity="warning", message="GPU 3 is the slow one")


def regions(app) -> dict[str, tuple[int, int, int, int]]:
    """Where each part of the dashboard is on the screen: (x, y, width, height)."""
    parts = {"host": HostLine, "hints": HintBar, "cards": GpuPanel, "table": ProcessTable}
    found = {name: tuple(app.query_one(kind).region) for name, kind in parts.items()}
    found["header"] = tuple(app.header.region)
    return found


async def test_every_part_keeps_its_rows_when_the_host_facts_and_hints_come_and_go():
    backend = demo_backend("training")
    # as launched: the first sample taken before Textual starts, shown at mount
    app = GputopApp(backend, autostart=False, first=backend.sample(wants=DASHBOARD))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        first = regions(app)
        lines = screen_lines(app)
        # the host line holds its row, its labels waiting for the first reading
        assert first["host"][1] == 1 and lines[1].startswith("CPU … · load … · RAM …"), lines[1]
        assert first["hints"][1:] == (2, 120, 1) and not lines[2].strip()  # blank, not gone
        assert first["cards"][1] == 3 and first["cards"][3] > 0
        app.sampler.tick()  # the host facts come with the sampler's next tick
        await settle(pilot)
        assert re.match(r"CPU +\d+% · load", screen_lines(app)[1]), screen_lines(app)[1]
        assert regions(app) == first
        snap = app.snapshot
        app.show_snapshot(replace(snap, hints=(HINT,)))
        await settle(pilot)
        assert screen_lines(app)[2].startswith("▲ GPU 3 straggler (s: details)")
        assert regions(app) == first
        app.show_snapshot(replace(snap, hints=()))
        await settle(pilot)
        assert not screen_lines(app)[2].strip()
        assert regions(app) == first


async def test_a_replayed_node_has_no_host_line_from_the_first_frame(tmp_path):
    app = GputopApp(recorded_replay(tmp_path, 5), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert not app.query(HostLine)  # not this machine's: no line, not a hidden one
        assert app.query_one(HintBar).region.y == 1


async def test_each_frame_at_a_size_has_the_cards_laid_out_for_that_size():
    app = make_app("training")
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        drawn: list[tuple] = []

        def laid_out(_screen) -> None:
            # published once a layout is drawn, before any Resize handler ran
            dashboard = app.query_one(DashboardView)
            drawn.append((tuple(app.size), dashboard.panel.columns,
                          tuple(dashboard.panel.region), tuple(dashboard.table.region)))

        app.screen.screen_layout_refresh_signal.subscribe(app.screen, laid_out)
        settled = {}
        for size in ((160, 50), (80, 24), (200, 60), (120, 40)):
            await pilot.resize_terminal(*size)
            for _ in range(3):
                await settle(pilot)
            dashboard = app.query_one(DashboardView)
            settled[size] = (size, dashboard.panel.columns, tuple(dashboard.panel.region),
                             tuple(dashboard.table.region))
        assert {size for size, *_ in drawn} == set(settled)
        for frame in drawn:
            assert frame == settled[frame[0]], (frame, settled[frame[0]])
