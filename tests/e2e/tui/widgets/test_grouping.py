"""Signals on a group row (b) of real processes: `k` names every PID and signals all after yes, a
group with one process that may not be signalled is signalled not at all, readonly refuses."""

from __future__ import annotations

import time

import psutil
import pytest

from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Snapshot
from gputop.tui.app import GputopApp
from gputop.tui.screens.modals import ConfirmSignal
from gputop.tui.widgets.grouped import GroupRow
from tests.support.procs import sleeper
from tests.support.tui import (
    LocalBackend,
    notices,
    settle,
    table,
    visible_lines,
)


@pytest.fixture
def children():
    procs = [sleeper() for _ in range(2)]
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


