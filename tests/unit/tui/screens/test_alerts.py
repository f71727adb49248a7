"""The dashboard's alerts (#29): a notice per transition, the count in the header, the alerts
screen (`!`) with acknowledgement, the terminal channels written through Textual's driver, the
channels' troubles said once, and the channels closed on exit within their deadline."""

from __future__ import annotations

import re
import socket
import time

from gputop.alerts.defaults import DEFAULT_RULES
from gputop.alerts.runtime import AlertConfig, read_config
from gputop.tui.app import ALERTS_CLOSE_S, ALERTS_STOP_GRACE_S, GputopApp
from gputop.tui.screens.alerts import AlertsScreen
from gputop.tui.screens.modals import HelpScreen
from gputop.tui.widgets.dashboard import DashboardView
from tests.support.demo import advance, recorded_replay
from tests.support.tui import make_app, notices, screen_lines, screen_text, settle

DEFAULTS = AlertConfig(DEFAULT_RULES)  # the shipped rules, no channel, no journal


def with_alerts(config: AlertConfig = DEFAULTS, scenario: str = "xid-thermal"):
    return make_app(scenario, alerts=lambda: config)


def channels(tmp_path, text: str) -> AlertConfig:
    """The shipped rules with the channels of ``text`` (TOML tables), as the settings file
    gives them."""
    from gputop.core import userfile

    table = userfile.load_toml(text)["alerts"]
    return read_config({**table, "journal": str(tmp_path / "alerts.jsonl")}, "config.toml")


async def until(pilot, done, timeout: float = 3.0) -> None:
    """Let the app run until ``done()`` (a channel's thread posts to it), at most ``timeout``."""
    end = time.monotonic() + timeout
    while not done() and time.monotonic() < end:
        await pilot.pause(0.02)
    assert done()


async def test_an_alert_that_fires_is_a_notice_a_count_in_the_header_and_a_row_of_the_screen():
    app = with_alerts()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        dashboard = app.query_one(DashboardView).region
        advance(app, 25)  # GPU 1 falls off the bus at 20 s: an Xid 79 and the GPU lost
        await settle(pilot)
        said = [(n.severity, n.title, n.message) for n in notices(app)]
        assert ("error", "FIRING critical: xid on node-a GPU 1") in [s[:2] for s in said]
        assert ("error", "FIRING critical: gpu-lost on node-a GPU 1",
                "GPU 1 is lost: GPU has fallen off the bus") in said
        header = screen_lines(app)[0]
        assert "▲ 1 alert (!)" in header  # the lost GPU fires on; an Xid is an event
        assert app.query_one(DashboardView).region == dashboard  # the header's, no new row
        await pilot.press("exclamation_mark")
        await settle(pilot)
        assert isinstance(app.screen, AlertsScreen)
        rows = screen_lines(app)[2:4]
        assert rows[0].startswith("00:00:20 node-a       1   critical ● firing      GPU 1 is lost")
        assert rows[1].startswith("00:00:20 node-a       1   critical fired         GPU 1 Xid 79")
        assert "No channel: alerts show here only" in screen_text(app)
        advance(app, 20)  # the screen follows the alerts while it is open
        await settle(pilot)
        assert screen_lines(app)[2].startswith("00:00:40 node-a       3   critical fired"), \
            screen_lines(app)[2]
        await pilot.press("exclamation_mark")
        await settle(pilot)
        assert not isinstance(app.screen, AlertsScreen)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        assert ("!", "alerts: what fired and resolved, acknowledge (a, A), channels' "
                     "deliveries") in app.screen.rows


async def test_acknowledging_the_selected_alert_or_all_of_them():
    app = with_alerts()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        advance(app, 25)
        await settle(pilot)
        await pilot.press("exclamation_mark")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AlertsScreen)
        await pilot.press("down")  # the Xid, not the lost GPU: the count stays
        await pilot.press("a")
        await settle(pilot)
        assert [r.acknowledged for r in app.alerting.history()] == [False, True]
        assert "critical fired     ✓   GPU 1 Xid 79" in screen_lines(app)[3]
        assert app.header.state.alerts == 1
        await pilot.press("A")
        await settle(pilot)
        assert [r.acknowledged for r in app.alerting.history()] == [True, True]
        assert app.header.state.alerts == 0
        await pilot.press("escape")
        await settle(pilot)
        assert "alert" not in screen_lines(app)[0]
        # shown again, the same screen, with what came since
        advance(app, 20)
        await pilot.press("exclamation_mark")
        await settle(pilot)
        assert app.screen is screen
        assert screen_lines(app)[2].startswith("00:00:40 node-a       3")


async def test_the_bell_and_a_desktop_notification_go_through_textuals_driver(tmp_path):
    config = channels(tmp_path, '[alerts.channel.ring]\ntype = "bell"\n'
                                '[alerts.channel.desk]\ntype = "osc9"\ntmux = false\n')
    app = with_alerts(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        written: list[str] = []
        # the driver the frames go through (Textual's private attribute: no public one)
        app._driver.write = written.append  # type: ignore[method-assign,union-attr]
        advance(app, 25)
        await until(pilot, lambda: written.count("\x07") >= 2 and len(written) >= 4)
        assert "\x1b]9;FIRING critical: xid on node-a GPU 1: GPU 1 Xid 79" in "".join(written)


async def test_a_channel_that_fails_is_one_notice_per_cause_not_one_per_alert(tmp_path):
    config = channels(tmp_path, '[alerts.channel.pager]\ntype = "command"\n'
                                'command = ["false"]\nretries = 0\n')
    app = with_alerts(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        advance(app, 45)  # three alerts fire: an Xid, the GPU lost, another Xid
        await until(pilot, lambda: app.alerting.status()[0].gave_up == 3)
        await settle(pilot)
        said = [n for n in notices(app) if n.title == "alert delivery"]
        assert len(said) == 1 and said[0].severity == "warning"
        assert said[0].message.startswith("alert channel pager (command false): ")
        await pilot.press("exclamation_mark")
        await settle(pilot)
        assert re.search(r"pager \(command false\): delivered 0, failed 3; last error at "
                         r"\d\d:\d\d:\d\d: false: exit 1", screen_text(app))


async def test_a_journal_that_cannot_be_written_is_one_notice(tmp_path):
    journal = tmp_path / "alerts.jsonl"
    app = with_alerts(read_config({"journal": str(journal)}, "config.toml"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        journal.mkdir()  # a folder where the file goes: read at start, no longer writable
        advance(app, 45)
        await settle(pilot)
        said = [n for n in notices(app) if "alert journal" in n.message]
        assert len(said) == 1 and said[0].severity == "error"
        assert len(app.alerting.history()) == 3  # the alerts still fire


async def test_closing_the_dashboard_closes_the_channels_in_time_with_a_webhook_that_never_answers(
        tmp_path):
    with socket.socket() as server:  # accepts (the kernel does) and never answers
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        url = f"http://127.0.0.1:{server.getsockname()[1]}/hook"
        config = channels(tmp_path, f'[alerts.channel.dead]\ntype = "webhook"\nurl = "{url}"\n')
        app = with_alerts(config)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            advance(app, 25)
            await until(pilot, lambda: app.alerting.status()[0].queued < 2)  # one in flight
            await pilot.press("q")
            start = time.monotonic()
        app.wait_for_alerts()
        took = time.monotonic() - start
        assert app.alerts_delivered is False  # closed, and the webhook held an alert
        assert took < ALERTS_CLOSE_S + ALERTS_STOP_GRACE_S + 0.3, took


async def test_a_replay_has_no_alerts(tmp_path):
    app = GputopApp(recorded_replay(tmp_path, 3, scenario="xid-thermal"), autostart=False,
                    alerts=lambda: DEFAULTS)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.alerting is None
        await pilot.press("exclamation_mark")
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        assert all(keys != "!" for keys, _ in app.screen.rows)


async def test_the_simulator_a_dashboard_fell_back_to_sends_no_alert_to_any_channel(tmp_path):
    """No device found: the simulator's alerts show on screen, and reach no receiver or
    journal that expects a real GPU's."""
    ran = tmp_path / "ran"
    config = channels(tmp_path, '[alerts.channel.pager]\ntype = "command"\n'
                                f'command = ["touch", "{ran}"]\n')
    app = with_alerts(config)
    app.backend.fallback_reason = "no NVIDIA driver"
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        advance(app, 25)
        await settle(pilot)
        assert app.alerting is not None and app.alerting.firing  # shown here
        assert app.alerting.status() == ()
        await pilot.pause(0.3)
    assert not ran.exists() and not (tmp_path / "alerts.jsonl").exists()
