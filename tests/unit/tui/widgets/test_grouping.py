"""Pilot tests of the process table's grouping key (b): by job, by user, back to processes."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Snapshot
from gputop.tui.app import GputopApp
from gputop.tui.screens.modals import ConfirmSignal
from gputop.tui.widgets.grouped import GroupRow
from gputop.tui.widgets.processes import ProcRow
from tests.support.demo import advance
from tests.support.tui import (  # noqa: F401 - autouse fixtures
    LocalBackend,
    make_app,
    no_user_themes_fixture,
    notices,
    settle,
    table,
    utc_fixture,
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
        assert "Processes, grouped by job (b)" in grouped  # the section says which mode
        await pilot.press("b", "b")  # by user, back to one row per process
        await settle(pilot)
        assert await help_rows(app, pilot) == per_process


@pytest.fixture
def children():
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
             for _ in range(2)]
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


async def test_k_on_a_group_asks_naming_every_pid_and_signals_all_after_yes(children):
    pids = [p.pid for p in children]
    app = GputopApp(LocalBackend(pids), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        (row,) = table(app).rows
        assert row.group.pids == sorted(pids)
        await pilot.press("k")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmSignal) and app.screen.pids == sorted(pids)
        shown = "\n".join(visible_lines(app))
        assert "to 2 processes" in shown and all(str(pid) in shown for pid in pids)
        await pilot.press("n")
        await settle(pilot)
        time.sleep(0.2)
        assert all(p.poll() is None for p in children)  # nothing sent on no
        await pilot.press("k")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert [p.wait(timeout=5) for p in children] == [-15, -15]
        assert any("sent SIGTERM to 2 processes" in n.message for n in notices(app))


class OneReusedPid(LocalBackend):
    """The second process's PID now names another process (its start time differs)."""

    def sample(self, devices=None, *, wants: Wants | None = EVERYTHING) -> Snapshot:
        snap = super().sample(devices, wants=wants)
        dev = snap.devices[0]
        procs = list(dev.processes)
        procs[1] = type(procs[1])(**{**{f: getattr(procs[1], f) for f in procs[1].__slots__},
                                     "started": psutil.Process(procs[1].pid).create_time() - 100})
        return type(snap)(host=snap.host, time=snap.time, backend=snap.backend,
                          devices=(type(dev)(index=0, name=dev.name, processes=tuple(procs)),))


async def test_a_group_with_one_process_that_may_not_be_signalled_is_not_signalled_at_all(
        children):
    app = GputopApp(OneReusedPid([p.pid for p in children]), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        await pilot.press("b", "k")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmSignal)
        assert any("reused" in n.message for n in notices(app))
    time.sleep(0.2)
    assert all(p.poll() is None for p in children)


async def test_readonly_refuses_to_signal_a_group(children):
    app = GputopApp(LocalBackend([p.pid for p in children]), autostart=False, readonly=True)
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        assert isinstance(table(app).rows[0], GroupRow)
        for key in ("k", "K", "i"):
            await pilot.press(key)
            await settle(pilot)
            assert not isinstance(app.screen, ConfirmSignal)
        app.action_signal("SIGTERM")  # the guard behind the missing key
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmSignal)
    time.sleep(0.2)
    assert all(p.poll() is None for p in children)


async def test_details_of_a_group_row_say_to_ungroup_first():
    app = make_app("training")
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 1)
        await settle(pilot)
        await pilot.press("b", "enter")
        await settle(pilot)
        assert any("details are per process" in n.message for n in notices(app))
