"""Pilot tests of the process table's grouping key (b): by job, by user, back to processes."""

from __future__ import annotations

from gputop.tui.widgets.grouped import GroupRow
from gputop.tui.widgets.processes import ProcRow
from tests.support.demo import advance
from tests.support.tui import (
    make_app,
    notices,
    settle,
    table,
    visible_lines,
)


def header_and_footer(app) -> str:
    lines = visible_lines(app)
    return lines[0] + "\n" + lines[-1]


async def test_b_groups_the_eight_ranks_into_one_row_then_by_user_then_back():
    app = make_app("training")
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        t = table(app)
        assert len(t.rows) == 8 and all(isinstance(r, ProcRow) for r in t.rows)
        memory = sum(r.process.gpu_memory_mib for r in t.rows)
        await pilot.press("b")
        await settle(pilot)
        (row,) = t.rows
        assert isinstance(row, GroupRow) and row.group.count == 8
        assert t.cells(row.key)["gpu"] == "0–7" and t.cells(row.key)["pid"] == "8"
        assert row.group.gpu_memory_mib == memory
        assert "grouped by job" in header_and_footer(app)
        screen = "\n".join(visible_lines(app))
        assert "PROCS" in screen and "python train.py --config configs" in screen
        advance(app, 1)  # updates keep the grouping, and the row in place
        await settle(pilot)
        assert t.keys() == [row.key] and "grouped by job" in header_and_footer(app)
        await pilot.press("b")
        await settle(pilot)
        assert [r.group.label for r in t.rows] == ["alice"]
        assert "grouped by user" in header_and_footer(app)
        await pilot.press("b")
        await settle(pilot)
        assert len(t.rows) == 8 and all(isinstance(r, ProcRow) for r in t.rows)
        assert "grouped" not in header_and_footer(app)


async def test_the_filter_and_sort_keys_apply_to_groups():
    app = make_app("mixed")
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        t = table(app)
        await pilot.press("b")
        await settle(pilot)
        total = len(t.rows)
        await pilot.press("slash", *"sweep", "enter")
        await settle(pilot)
        assert 0 < len(t.rows) < total
        assert all("sweep" in r.group.label for r in t.rows)
        note = header_and_footer(app)
        assert "filter 'sweep'" in note and "grouped by job" in note  # both stay in view
        await pilot.press("escape")
        await settle(pilot)
        assert len(t.rows) == total
        await pilot.press("M")  # GPU memory, largest first
        await settle(pilot)
        memory = [r.group.gpu_memory_mib for r in t.rows]
        assert memory == sorted(memory, reverse=True)
        await pilot.press("P")  # how many processes
        await settle(pilot)
        counts = [r.group.count for r in t.rows]
        assert counts == sorted(counts)


async def test_help_names_the_grouping_key():
    app = make_app("training")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await settle(pilot)
        assert any(keys == "b" and "group" in what for keys, what in app.screen.rows)


async def help_rows(app, pilot) -> dict[str, str]:
    """What `?` shows, by key; the section headings under their own names."""
    await pilot.press("question_mark")
    await settle(pilot)
    rows = {keys or what: what for keys, what in app.screen.rows}
    await pilot.press("escape")
    await settle(pilot)
    return rows


async def test_help_describes_the_keys_as_they_act_on_groups():
    app = make_app("training")
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 1)
        await settle(pilot)
        per_process = await help_rows(app, pilot)
        assert "PID" in per_process["P"] and "JOB" in per_process["J"]
        await pilot.press("b")
        await settle(pilot)
        grouped = await help_rows(app, pilot)
        assert "PROCS" in grouped["P"] and "PID" not in grouped["P"]
        assert "GROUP" in grouped["J"] and "JOB" not in grouped["J"]
        assert "GPUS" in grouped["G"]
        assert "every process of the selected group" in grouped["K"]
        # the section says which mode, and that ≈ marks a guessed group (#27)
        assert ("Processes, grouped by job (b); ≈ marks a group guessed from user and command"
                in grouped)
        await pilot.press("b", "b")  # by user, back to one row per process
        await settle(pilot)
        assert await help_rows(app, pilot) == per_process


async def test_details_of_a_group_row_say_to_ungroup_first():
    app = make_app("training")
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 1)
        await settle(pilot)
        await pilot.press("b", "enter")
        await settle(pilot)
        assert any("details are per process" in n.message for n in notices(app))
