"""The advisor screen (dashboard key `a`) driven with Textual's pilot on the simulator."""

from __future__ import annotations

from textual.widgets import DataTable

from gputop.advisor.recommend import SweepConfig
from gputop.sampler import Sampler
from gputop.tui.screens.advisor import AdvisorScreen
from tests.support.advise import Host, open_sim, text_of
from tests.support.tui import notices, wait_until

FAST = SweepConfig(settle_s=2, measure_s=6)


async def test_sweep_on_the_screen_shows_rows_curve_and_restores(adv):
    backend = open_sim(adv)
    sampler = Sampler(backend, 1.0)
    sampler.start()
    try:
        app = Host(backend, sampler, config=FAST, devices=[0, 1])
        async with app.run_test(size=(120, 60)) as pilot:
            screen = app.screen
            assert isinstance(screen, AdvisorScreen)
            await wait_until(pilot, lambda: "p95" in text_of(screen, "#adv-passive"))
            await pilot.press("s")
            await wait_until(pilot, lambda: screen.result is not None or screen.error is not None)
            assert screen.error is None, text_of(screen, "#adv-status")
            result = screen.result
            assert result.stopped == "max-slowdown"
            await pilot.pause(0.1)
            table = screen.query_one("#adv-table", DataTable)
            assert table.row_count == len(result.rows) >= 4
            assert "power limit (W)" in text_of(screen, "#adv-plot")
            assert "Recommended limit" in text_of(screen, "#adv-rec")
            assert "restored" in text_of(screen, "#adv-status")
            for row in result.rows:
                assert abs(row.slowdown_pct - row.true_slowdown_pct) <= 2.0
        assert [d.power_limit_w for d in backend.sample().devices] == [700.0] * 8
        assert adv.journals() == []
    finally:
        sampler.stop()


async def test_closing_mid_sweep_restores_before_leaving(adv):
    backend = open_sim(adv, speed=20.0)  # slow enough to be mid-sweep when closing
    app = Host(backend, None, config=SweepConfig(settle_s=4, measure_s=10))
    async with app.run_test() as pilot:
        screen = app.screen
        await pilot.press("s")
        await wait_until(pilot, lambda: "step 1" in text_of(screen, "#adv-status"))
        await wait_until(pilot, lambda: any(d.power_limit_w < 700 for d in backend.sample().devices))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, AdvisorScreen))
        assert screen.finished.is_set() and screen.error == "cancelled"
    assert [d.power_limit_w for d in backend.sample().devices] == [700.0] * 8
    assert adv.journals() == []


async def test_quitting_the_app_mid_sweep_restores(adv):
    backend = open_sim(adv, speed=20.0)
    app = Host(backend, None, config=SweepConfig(settle_s=4, measure_s=10))
    async with app.run_test() as pilot:
        screen = app.screen
        await pilot.press("s")
        await wait_until(pilot, lambda: any(d.power_limit_w < 700 for d in backend.sample().devices))
        app.exit()
    assert screen.finished.is_set()
    assert [d.power_limit_w for d in backend.sample().devices] == [700.0] * 8
    assert adv.journals() == []


async def test_no_permission_and_readonly_change_nothing(adv, monkeypatch):
    monkeypatch.setenv("GPUTOP_SIM_NO_PERMISSION", "1")
    backend = open_sim(adv, speed=50.0)
    app = Host(backend, None, config=FAST)
    async with app.run_test(size=(160, 50)) as pilot:
        screen = app.screen
        await pilot.press("s")
        await wait_until(pilot, lambda: not screen.running and "cannot sweep" in text_of(screen, "#adv-status"))
        status = text_of(screen, "#adv-status")
        assert "CAP_SYS_ADMIN" in status and "sudo nvidia-smi -i" in status
    monkeypatch.delenv("GPUTOP_SIM_NO_PERMISSION")
    ro = Host(backend, None, config=FAST, readonly=True)
    async with ro.run_test(size=(160, 50)) as pilot:
        await pilot.press("s")
        await pilot.pause(0.1)
        assert not ro.screen.running and "read-only" in text_of(ro.screen, "#adv-status")
    assert [d.power_limit_w for d in backend.sample().devices] == [700.0] * 8
    assert not adv.state.exists() and adv.journals() == []


async def test_the_dashboard_says_nothing_of_limits_when_no_run_left_any(adv):
    from gputop.tui.app import GputopApp

    app = GputopApp(open_sim(adv), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert not [n for n in notices(app) if n.title == "power limits"]


async def test_a_cancelled_sweep_is_not_counted_as_the_jobs_capped_time(adv):
    backend = open_sim(adv, speed=20.0)
    sampler = Sampler(backend, 0.05)
    sampler.start()
    try:
        app = Host(backend, sampler, config=SweepConfig(settle_s=4, measure_s=10), devices=[0])
        async with app.run_test(size=(80, 40)) as pilot:
            screen = app.screen
            await wait_until(pilot, lambda: "p95" in text_of(screen, "#adv-passive"))
            await pilot.press("s")
            # the sweep's own lower limit holds the clock down for a while
            await wait_until(pilot, lambda: 1.0 in sampler.history.device_series(
                0, "power_capped", points=3)[1])
            await pilot.pause(0.3)
            await pilot.press("c")
            await wait_until(pilot, lambda: screen.error == "cancelled")
            screen.refresh_passive()
            await pilot.pause(0.1)
            text = text_of(screen, "#adv-passive")
            assert "nothing was changed" not in text and "sweep's own limits left out" in text
            row = next(line for line in text.splitlines() if line.lstrip().startswith("0 "))
            assert " 0% " in row and "held back by the power cap" not in row
            # at 80 columns the note is cut, never wrapped onto the next line
            assert screen.query_one("#adv-passive").size.height == len(text.splitlines())
    finally:
        sampler.stop()
