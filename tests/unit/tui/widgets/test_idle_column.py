"""The IDLE column (#30): how long each process has held its GPU idle, on process and group
rows, shown only while some process has been held idle."""

from __future__ import annotations

from tests.support.demo import advance
from tests.support.tui import make_app, settle, table, visible_lines


async def test_idle_shows_on_the_idle_holder_and_its_group_and_not_where_none_is():
    app = make_app("mixed")  # GPU 7: a notebook holding 30 GiB, doing nothing
    async with app.run_test(size=(140, 40)) as pilot:
        advance(app, 5)
        await settle(pilot)
        t = table(app)
        header = next(line for line in visible_lines(app) if "COMMAND" in line)
        assert "IDLE" in header
        idle = {r.gpu: t.cells(r.key)["idle"] for r in t.rows}
        assert idle[7] not in ("-", "N/A") and idle[0] == "-"
        await pilot.press("b")
        await settle(pilot)
        groups = {r.group.gpus[0]: t.cells(r.key)["idle"] for r in t.rows}
        assert groups[7] == idle[7]
        assert "IDLE" in next(line for line in visible_lines(app) if "GROUP" in line)


async def test_no_idle_column_while_nobody_held_a_gpu_idle():
    app = make_app("training")
    async with app.run_test(size=(140, 40)) as pilot:
        advance(app, 5)
        await settle(pilot)
        assert not any("IDLE" in line for line in visible_lines(app))
