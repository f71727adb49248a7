"""The dashboard's signal keys on real processes: asked first, sent only after yes, refused to
other users' processes and in readonly mode, and a process that vanished is no error; bad
recording options stop `gputop` in one line before it opens."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from gputop.tui.app import GputopApp
from tests.support.tui import (
    LocalBackend,
    notices,
    settle,
    visible_lines,
)


async def test_kill_asks_first_and_sends_only_after_yes(child):
    app = GputopApp(LocalBackend([child.pid]), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        from gputop.tui.screens.modals import ConfirmSignal

        await pilot.press("k")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmSignal) and app.screen.signal_name == "SIGTERM"
        # drawn over the dimmed table, not a blank screen (#27): the row and the question
        assert app.export_screenshot().count(str(child.pid)) >= 2
        assert app.screen.focused is not None and app.screen.focused.id == "no"  # No by default
        time.sleep(0.2)
        assert child.poll() is None  # nothing sent before the answer
        await pilot.press("n")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmSignal)
        time.sleep(0.2)
        assert child.poll() is None
        await pilot.press("k")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert child.wait(timeout=5) == -15
        assert any("sent SIGTERM" in n.message for n in notices(app))


async def test_sigkill_and_sigint_keys(child):
    app = GputopApp(LocalBackend([child.pid]), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)
        assert app.screen.signal_name == "SIGINT"
        await pilot.press("escape")
        await pilot.press("K")
        await settle(pilot)
        assert app.screen.signal_name == "SIGKILL"
        await pilot.press("y")
        await settle(pilot)
        assert child.wait(timeout=5) == -9


async def test_readonly_has_no_signal_action(child):
    app = GputopApp(LocalBackend([child.pid]), autostart=False, readonly=True)
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        from gputop.tui.screens.modals import ConfirmSignal

        for key in ("k", "K", "i"):
            await pilot.press(key)
            await settle(pilot)
            assert not isinstance(app.screen, ConfirmSignal)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert not any("SIG" in t for t in titles)
        assert "SIGTERM" not in "\n".join(visible_lines(app))  # not in the footer either
        await pilot.press("question_mark")
        await settle(pilot)
        assert not any("SIG" in what for _, what in app.screen.rows)
    time.sleep(0.2)
    assert child.poll() is None


async def test_a_vanished_process_is_not_an_error(child):
    app = GputopApp(LocalBackend([child.pid]), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        await pilot.press("k")
        await settle(pilot)
        child.kill()
        child.wait()
        await pilot.press("y")
        await settle(pilot)
        notes = [(n.message, n.severity) for n in notices(app)]
        assert any("already exited" in m and s == "information" for m, s in notes), notes


def test_ownership_rule_refuses_other_users_unless_root(monkeypatch, child):
    from gputop.host import signals

    real_uid = psutil.Process(child.pid).uids().real
    monkeypatch.setattr(signals.os, "geteuid", lambda: real_uid + 1)
    assert "another user" in signals.refusal(child.pid)
    monkeypatch.setattr(signals.os, "geteuid", lambda: 0)
    assert signals.refusal(child.pid) is None
    monkeypatch.setattr(signals.os, "geteuid", lambda: real_uid)
    assert signals.refusal(child.pid) is None
    created = psutil.Process(child.pid).create_time()
    assert "reused" in signals.refusal(child.pid, started=created - 100)


@pytest.mark.parametrize(("argv", "message"), [
    (["--record-fields", "index,bogus"],
     "gputop: --record-fields: Field \"bogus\" is not a valid field to query.\n"),
    (["--record-dir", "/no/such/folder"],
     "gputop: --record-dir '/no/such/folder' is not a folder\n"),
])
def test_bad_recording_options_are_one_line_errors_before_the_dashboard_opens(argv, message):
    proc = subprocess.run([sys.executable, "-m", "gputop", "--backend", "sim", *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == message and proc.stdout == ""


