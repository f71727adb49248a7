"""SVG snapshot tests (pytest-textual-snapshot; Textual pinned exactly, see pyproject).

Update after an intended change: pytest tests/unit/tui/test_snapshots.py --snapshot-update
"""

from gputop.tui.app import GputopApp
from tests.support.demo import advance, demo_backend


def dashboard(scenario: str, **kwargs) -> GputopApp:
    return GputopApp(demo_backend(scenario), autostart=False, **kwargs)


def ticks(seconds: float):
    async def run_before(pilot) -> None:
        advance(pilot.app, seconds)
        await pilot.pause()
        await pilot.pause()

    return run_before


def test_training_dashboard_120x40(snap_compare):
    assert snap_compare(dashboard("training"), terminal_size=(120, 40), run_before=ticks(60))


def test_dense_16_compact_at_80x24(snap_compare):
    assert snap_compare(dashboard("dense-16"), terminal_size=(80, 24), run_before=ticks(20))


def test_lost_gpu_in_the_light_theme(snap_compare):
    assert snap_compare(dashboard("gpu-lost", theme="light"), terminal_size=(120, 40),
                        run_before=ticks(35))


def test_filtered_processes(snap_compare):
    async def run_before(pilot) -> None:
        advance(pilot.app, 10)
        await pilot.press("slash", *"svc-batch", "enter")
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(dashboard("crowded"), terminal_size=(100, 30), run_before=run_before)


def test_the_alerts_screen(snap_compare):
    from gputop.alerts.defaults import DEFAULT_RULES
    from gputop.alerts.runtime import AlertConfig

    async def run_before(pilot) -> None:
        advance(pilot.app, 45)  # an Xid and a lost GPU at 20 s, another Xid at 40 s
        await pilot.pause()
        await pilot.press("exclamation_mark")
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()

    app = dashboard("xid-thermal", alerts=lambda: AlertConfig(DEFAULT_RULES))
    assert snap_compare(app, terminal_size=(120, 30), run_before=run_before)
