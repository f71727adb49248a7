"""What a new user hit in the first hour (issue 14), each checked in the running dashboard."""

from __future__ import annotations

import dataclasses
import os
import re

import pytest

from gputop.core.model import Device
from gputop.tui.app import GputopApp
from gputop.tui.text import fmt
from gputop.tui.widgets.gpu import GpuCard
from tests.support.demo import advance, recorded_replay
from tests.support.tui import (
    LocalBackend,
    make_app,
    notices,
    screen_lines,
    screen_text,
    settle,
    table,
)


def toasts(app) -> list[str]:
    return [str(n.message) for n in notices(app)]


async def test_plus_and_minus_keep_one_notice_and_say_when_at_the_floor():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("minus", "minus", "minus", "minus", "minus")
        await settle(pilot)
        assert app.sampler.interval == 0.25
        assert toasts(app) == ["sampling every 0.25s: the fastest there is"]
        await pilot.press("plus")
        await settle(pilot)
        assert toasts(app) == ["sampling every 0.5s"]


async def test_a_filter_and_only_this_gpu_stay_visible_while_they_apply():
    app = make_app("crowded")
    async with app.run_test(size=(100, 30)) as pilot:
        advance(app, 3)
        await pilot.press("slash", *"svc", "enter")
        await pilot.press("o")
        await settle(pilot)
        app.clear_notifications()  # long after any notice faded
        await settle(pilot)
        text = screen_text(app).splitlines()[0]
        assert "filter 'svc'" in text and "GPU 0 only" in text
        await pilot.press("greater_than_sign")
        await settle(pilot)
        assert "GPU 1 only" in screen_text(app).splitlines()[0]
        await pilot.press("escape", "o")
        await settle(pilot)
        assert "filter" not in screen_text(app).splitlines()[0]
        assert "only" not in screen_text(app).splitlines()[0]


async def test_the_filter_box_is_whole_above_the_footer():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("slash")
        await settle(pilot)
        box = app.query_one("#filter").region
        footer = app.query_one("KeyFooter").region
        assert box.height == 3 and box.bottom <= footer.y


async def test_help_keys_never_run_into_their_description():
    app = make_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("question_mark")
        await settle(pilot)
        text = str(app.screen.query_one("#help-text").render())
        assert "home/endmove" not in text
        for line in text.splitlines():
            assert "home/end" not in line or line.rstrip().endswith("home/end")


async def test_q_closes_what_is_over_the_dashboard_and_keeps_its_state():
    """q over help, the saturation panel or the process view closes it, with the filter, sort
    and grouping kept (it quit gputop and lost them: #27); ctrl+c still quits from there."""
    for opener in ("question_mark", "s", "d"):
        app = make_app("mixed")
        async with app.run_test(size=(120, 40)) as pilot:
            advance(app, 2)
            await settle(pilot)
            t = table(app)
            user = sorted({r.process.user for r in t.rows})[0]
            grouped = opener != "d"  # the process view opens on a process, not a group
            await pilot.press("slash", *user, "enter", "m", *(("b",) if grouped else ()))
            await settle(pilot)
            state = (t.needle, t.sort_column, t.sort_reverse, t.grouping)
            await pilot.press(opener)
            await settle(pilot)
            assert app.screen is not app.screen_stack[0], opener
            await pilot.press("q")
            await settle(pilot)
            assert not app._exit and app.screen is app.screen_stack[0], opener
            assert (t.needle, t.sort_column, t.sort_reverse, t.grouping) == state
            assert state[0] == user and (state[3] != "process") == grouped
            await pilot.press(opener, "ctrl+c")
            await settle(pilot)
            assert app._exit, opener


async def test_the_history_plot_time_axis_follows_the_samples_after_an_interval_change():
    app = make_app()
    async with app.run_test(size=(120, 50)) as pilot:
        advance(app, 20)  # 20 samples 1 s apart
        await pilot.press("plus")  # now every 2 s
        await settle(pilot)
        advance(app, 20, interval=2.0)  # 10 samples over 20 s
        await pilot.press("h")
        await settle(pilot)
        times = app.sampler.history.device_series(0, "utilization_gpu_pct")[0]
        span = times[-1] - times[0]
        plot = str(app.dashboard.plot.render())
        assert f"-{span:.0f}s" in plot  # 39 s of samples, not 29 samples x 2 s
        assert f"-{29 * 2}s" not in plot


def test_busy_is_not_danger_and_only_nearly_full_memory_is():
    from gputop.tui.widgets.gpu import gauge_class

    assert gauge_class(100.0) == gauge_class(10.0) == "gpu--low"
    assert gauge_class(99.0, memory=True) == "gpu--high"
    assert gauge_class(90.0, memory=True) == "gpu--mid"
    assert gauge_class(60.0, memory=True) == "gpu--low"


def test_a_steady_load_draws_a_line_not_a_second_bar():
    card = GpuCard(0)
    for _ in range(40):
        card.update(Device(index=0, utilization_gpu_pct=97, memory_used_mib=1,
                           memory_total_mib=2), when=0.0)
    trace = card.spark("util", 10)
    assert trace.strip() and set(trace.strip()) == {"⠉"}
    filled, _ = fmt.bar(97, 10)
    assert not set(trace) & set(filled)


async def test_the_command_palette_says_each_action_once():
    app = make_app()
    async with app.run_test(size=(120, 40)):
        commands = list(app.get_system_commands(app.screen))
        titles = [c.title for c in commands]
        assert len(titles) == len(set(titles))
        for c in commands:
            # the help line adds the key; it does not repeat the title in other words
            assert c.title.lower() not in c.help.lower(), c


async def test_the_screenshot_command_saves_where_there_is_no_downloads_folder(tmp_path,
                                                                               monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    app = make_app(record_dir=str(tmp_path / "here"))
    (tmp_path / "here").mkdir()
    async with app.run_test(size=(80, 24)) as pilot:
        command = next(c for c in app.get_system_commands(app.screen) if c.title == "Screenshot")
        command.callback()
        await settle(pilot)
        saved = list((tmp_path / "here").glob("*.svg"))
        assert len(saved) == 1 and saved[0].read_text().startswith("<svg")
        assert any(f"screenshot saved to {saved[0]}" in t for t in toasts(app))


def test_replay_positions_as_the_header_prints_them():
    from gputop.tui.app import position_seconds

    assert position_seconds("1:10") == 70.0
    assert position_seconds("70") == 70.0 and position_seconds(" 0:45.5 ") == 45.5
    assert position_seconds("1:02:03") == 3723.0
    for bad in ("", "1:", "1:75", "x", "-3", "inf", "1:2:3:4"):
        assert position_seconds(bad) is None, bad


async def test_hints_show_on_the_main_view_and_s_opens_the_panel_at_their_gpu():
    from gputop.tui.screens.saturation import SaturationScreen

    app = make_app("straggler")
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 60)
        await settle(pilot)
        lines = screen_text(app).splitlines()
        assert lines[1].startswith("CPU  38% · load 41.52"), lines[1]  # the host line
        assert lines[2].startswith("▲ GPU 5 straggler (+1 more, s: details): GPU 5 is the slow"
                                   " one"), lines[2]
        card5 = app.dashboard.cards[5].line_texts()[0]
        assert "[straggler]" in card5 and "[thermal-throttled]" in card5
        assert "[straggler]" not in app.dashboard.cards[4].line_texts()[0]
        await pilot.press("s")
        await settle(pilot)
        assert isinstance(app.screen, SaturationScreen)
        assert app.dashboard.selected_gpu == 5


async def test_a_healthy_node_has_a_blank_hint_bar():
    app = make_app("training")
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 60)
        await settle(pilot)
        bar = app.query_one("#hints")
        # its row kept, blank: a hint that comes moves nothing (#26)
        assert bar.region.height == 1 and not screen_lines(app)[bar.region.y].strip()
        assert "s: details" not in screen_text(app)


async def test_cards_show_sm_activity_beside_gpu_util_where_it_is_measured():
    from dataclasses import replace

    from gputop.core.model import Saturation
    from gputop.tui.widgets.gpu import util_text

    dev = Device(index=0, utilization_gpu_pct=100)
    assert util_text(dev) == "100%"  # no GPM: nothing made up
    measured = replace(dev, saturation=Saturation(source="gpm", sm_active_pct=41.0))
    assert util_text(measured) == "100%  SM act  41%"
    app = make_app("dataloader-bound")
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 5)
        await settle(pilot)
        assert "SM act" in app.dashboard.cards[0].line_texts()[1]


async def test_sorting_by_host_memory_keeps_the_title_and_its_arrow():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await pilot.press("H")
        await settle(pilot)
        header = next(line for line in screen_text(app).splitlines() if "COMMAND" in line)
        assert "HOSTMEM▼" in header and "…" not in header


async def test_the_saturation_verdicts_are_whole_at_80_columns():
    from gputop.tui.widgets.saturation import GpuSaturation

    app = make_app("straggler")
    async with app.run_test(size=(80, 24)) as pilot:
        advance(app, 60)
        await pilot.press("s")
        await settle(pilot)
        text = screen_text(app)
        verdicts = {card.index: card.verdict_text for card in app.screen.query(GpuSaturation)}
        assert verdicts[5].startswith("straggler: the slow GPU of its job")
        assert len(verdicts[5]) > 60  # longer than what is left beside the bars at 80 columns
        for index, verdict in verdicts.items():
            assert verdict in text, (index, verdict)
        assert "…" not in text


async def test_stepping_a_10_hz_replay_moves_the_shown_position_and_snapshot(tmp_path):
    """`,`/`.` on a log of ten samples a second: each step shows in the header and on screen,
    with the sampler running as it does for a user (not ticked by the test)."""
    import asyncio

    backend = recorded_replay(tmp_path, 50, 0.1)  # five seconds at 10 Hz
    player = backend.player
    app = GputopApp(backend)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("space")  # pause
        player.seek(2.0)
        await settle(pilot)

        async def shown_after(key: str) -> tuple[str, float]:
            await pilot.press(key)
            want = backend.snapshot(player.index).time
            for _ in range(100):  # the sampler's thread reads the new position
                await asyncio.sleep(0.02)
                await settle(pilot)
                if app.snapshot.time == want:
                    break
            assert app.snapshot.time == want, key
            header = screen_text(app).splitlines()[0]
            return app.header.state.replay, header

        seen = [await shown_after(key) for key in ("full_stop", "full_stop", "comma")]
        assert [r for r, _ in seen] == ["⏸ 0:02.1 / 0:04.9 x1", "⏸ 0:02.2 / 0:04.9 x1",
                                        "⏸ 0:02.1 / 0:04.9 x1"]
        assert all(r in header for r, header in seen)
        assert abs(app.snapshot.time - backend.snapshot(0).time - 2.1) < 1e-3


async def test_keys_typed_after_slash_in_one_read_are_the_filters_text():
    """`/sleep` arriving in one read (a paste, fast typing over SSH) opened the saturation panel
    (`s`) and paused sampling (`p`): every key was queued before `/` focused the box (#27)."""
    from textual import events

    app = make_app("mixed")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for ch in "/sleep/x":  # all queued before the first is handled; `/` in the box is text
            app.post_message(events.Key("slash" if ch == "/" else ch, ch))
        await settle(pilot)
        assert app.screen is app.screen_stack[0] and not app.sampler.paused
        assert app.filter_box.value == "sleep/x" and table(app).needle == "sleep/x"


@pytest.mark.parametrize("scenario", ["mixed", "mig", "training"])
async def test_at_80x24_every_process_shows_30_characters_of_its_command(scenario):
    """#27: at 80 columns COMMAND had 0 characters (the table ended at TIME). Now columns that
    hold nothing here collapse, CPU% and HOST MEM (and SM% under MIG) give way, and the command
    starts with its program's name and script."""
    from gputop.tui.text.command import program_first

    app = make_app(scenario)
    async with app.run_test(size=(80, 24)) as pilot:
        advance(app, 2)
        await settle(pilot)
        t = table(app)
        lines = screen_text(app).splitlines()
        header = next(i for i, line in enumerate(lines) if "COMMAND" in line)
        at = lines[header].index("COMMAND")
        shown = [line[at:].rstrip(" ▁▂▃▄▅▆▇█▏") for line in lines[header + 1:]
                 if re.match(r"\s+\d+\s", line)]  # the process rows, not the footer
        rows = t.rows[: len(shown)]
        assert len(rows) >= 4
        for row, text in zip(rows, shown, strict=False):
            whole = program_first(row.process.command or row.process.name or "")
            assert len(text) >= min(30, len(whole)), (text, whole)
            assert text.startswith(whole[:20]), (text, whole)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_one_badge_per_cause_and_never_half_a_badge(size):
    """#27: `[power-capped] [pow` at 80 columns, `[power-capped] [power cap]` at 120: the clock
    event a hint names has no badge of its own, and a badge that does not fit is left out."""
    app = make_app("power-capped")
    async with app.run_test(size=size) as pilot:
        advance(app, 20)
        await settle(pilot)
        lines = [line for line in screen_text(app).splitlines() if "[power-capped]" in line]
        assert lines
        for line in lines:
            assert "[power cap]" not in line and "[CAP]" not in line
            assert line.count("[") == line.count("]"), line


async def test_a_read_only_dashboard_says_so_in_its_header():
    """#27 polish: --readonly took the changing keys away without a word on the screen."""
    for readonly in (True, False):
        app = make_app(readonly=readonly)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            first = screen_text(app).splitlines()[0]
            assert ("READ-ONLY" in first) is readonly


async def test_help_and_filter_box_say_the_same_of_what_the_filter_matches():
    """#27 polish: the help said "user, command or PID", the docs "user, job, command or PID"
    (what it matches). One phrase, from the table that matches."""
    from gputop.tui import actions
    from gputop.tui.widgets.processes import FILTER_MATCHES

    assert FILTER_MATCHES == "user, job, command or PID"
    slash = next(a for a in actions.DASHBOARD if a.keys == "/")
    assert FILTER_MATCHES in slash.description
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert FILTER_MATCHES in app.filter_box.placeholder


@pytest.mark.parametrize("readonly, why", [
    (False, "not on this machine"), (True, "read-only: send SIGTERM")])
async def test_the_footer_offers_k_only_where_it_works_and_k_says_why(readonly, why):
    """#27 polish: the footer offered `k SIGTERM` on the simulator, and `k` said nothing in a
    read-only session."""
    app = make_app(readonly=readonly)
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        for opener in ((), ("d",)):  # the dashboard, then the process view
            await pilot.press(*opener)
            await settle(pilot)
            assert "SIGTERM" not in screen_text(app).splitlines()[-1], opener
            await pilot.press("k")
            await settle(pilot)
            assert any(why in str(n.message) for n in notices(app)), opener


async def test_the_advisor_screen_offers_none_of_the_tables_keys():
    """#27 polish: the advisor screen's footer offered k SIGTERM for a table it hides."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "sweep" in footer and "filter" not in footer and "SIGTERM" not in footer


LONG = ("/home/ana/.pyenv/versions/3.11.7/bin/python3 train.py --rank 0"
        " --config configs/llama-70b-long-context.yaml --seed 1234 --out /scratch/ana/run-42")


class _LongCommandBackend(LocalBackend):
    """One GPU whose process runs from an interpreter's full path with many arguments."""

    def sample(self, devices=None, *, wants=None):
        snap = super().sample(devices, wants=wants)
        dev = snap.devices[0]
        procs = tuple(dataclasses.replace(p, command=LONG) for p in dev.processes)
        return dataclasses.replace(snap, devices=(dataclasses.replace(dev, processes=procs),))


def _command_cell(app) -> tuple[str, str]:
    """The process table's COMMAND title and its first row's cell, as drawn."""
    lines = screen_text(app).splitlines()
    header = next(i for i, line in enumerate(lines) if "COMMAND" in line)
    at = lines[header].index("COMMAND")
    return lines[header][at:].rstrip(), lines[header + 1][at:].rstrip()


@pytest.mark.parametrize("width", [80, 200])
async def test_the_full_path_shows_where_it_fits_and_the_program_where_not(width):
    """#27: the table shows the program first (`python3 train.py`), and on a screen wide enough
    for the whole line, the interpreter's full path too."""
    short = LONG.removeprefix("/home/ana/.pyenv/versions/3.11.7/bin/")
    app = GputopApp(_LongCommandBackend([os.getpid()]), autostart=False)
    async with app.run_test(size=(width, 30)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        _, cell = _command_cell(app)
        if width == 200:
            assert cell == LONG
        else:
            assert cell.startswith("python3 train.py --rank 0") and "…" in cell
            assert cell.endswith(short[-(len(cell) - cell.index("…") - 1):])


async def test_left_and_right_scroll_the_commands_sideways():
    """#27: at 80 columns ←/→ read the rest of a command line in place; the title says how far
    it scrolled, and ← back to the start shows the program first again."""
    short = LONG.removeprefix("/home/ana/.pyenv/versions/3.11.7/bin/")
    app = GputopApp(_LongCommandBackend([os.getpid()]), autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        title, start = _command_cell(app)
        assert title == "COMMAND"
        offset = -1
        for _ in range(30):  # until it stops: at the line's end
            if table(app).text_offset == offset:
                break
            offset = table(app).text_offset
            await pilot.press("right")
        await settle(pilot)
        title, cell = _command_cell(app)
        assert title == f"COMMAND +{offset}" and offset > 0
        assert cell == short[offset:] and short.endswith(cell)  # the end, with no gap after
        await pilot.press("left")
        await settle(pilot)
        assert table(app).text_offset < offset
        for _ in range(30):
            if not table(app).text_offset:
                break
            await pilot.press("left")
        await settle(pilot)
        assert _command_cell(app) == ("COMMAND", start)


async def test_keys_typed_after_g_in_one_read_are_the_prompts_text(tmp_path):
    """`g0:30⏎` arriving in one read: every key was queued before the prompt's box was built
    and focused, so they were lost (or ran as the dashboard's keys). #27: every input box
    takes the keys typed after the key that opened it."""
    from textual import events

    backend = recorded_replay(tmp_path, 60)
    app = GputopApp(backend, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("space")  # paused: only the seek moves it
        await settle(pilot)
        for ch in "g0:30":
            app.post_message(events.Key(ch if ch != ":" else "colon", ch))
        app.post_message(events.Key("enter", "\r"))
        for _ in range(5):
            await settle(pilot)
        assert app.screen is app.screen_stack[0] and not notices(app)
        assert backend.player.position == pytest.approx(backend.player.times[0] + 30, abs=1.0)
        for ch in "/gg":  # in a text box `g` is text, though its binding goes first
            app.post_message(events.Key("slash" if ch == "/" else ch, ch))
        await settle(pilot)
        assert app.screen is app.screen_stack[0] and app.filter_box.value == "gg"


async def test_the_kill_question_names_user_gpu_pid_and_the_whole_command(child):
    """#27: `Send SIGTERM to 8 processes of …/versions/3.11.7/bin/` on a blank screen. The
    question is drawn over the dashboard, names user, GPU and PID, wraps the command whole,
    and No has the focus."""
    import getpass

    from textual.widgets import Button

    from gputop.tui.screens.modals import ConfirmSignal

    app = GputopApp(_LongCommandBackend([child.pid]), autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        await pilot.press("k")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmSignal)
        text = screen_text(app)
        assert "0 Fake GPU" in text and "GPU▲" in text  # the dashboard stays behind it
        words = " ".join(line.strip(" █▀▄") for line in text.splitlines())
        assert f"user {getpass.getuser()} · GPU 0 · PID {child.pid}" in words
        assert all(part in words for part in LONG.split())  # every word: nothing cut
        assert "…" not in words
        assert isinstance(app.focused, Button) and app.focused.id == "no"
        await pilot.press("q")
        await settle(pilot)
        assert child.poll() is None  # no: nothing was sent


async def test_the_kill_question_has_no_focused_from_its_first_frame(child, monkeypatch):
    """#26: No was focused once the question was mounted: its first frame showed Yes focused
    and a second frame moved the focus."""
    from gputop.tui.screens.modals import ConfirmSignal

    focused: list[str | None] = []
    real = ConfirmSignal._compositor_refresh

    def drawn(self) -> None:
        focused.append(self.focused.id if self.focused else None)
        real(self)

    monkeypatch.setattr(ConfirmSignal, "_compositor_refresh", drawn)
    app = GputopApp(_LongCommandBackend([child.pid]), autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        await pilot.press("k")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmSignal)
        assert focused and set(focused) == {"no"}
        await pilot.press("q")
        await settle(pilot)


async def test_a_key_of_the_view_pressed_in_the_help_closes_it_and_does_its_work():
    """#27: `p` and `t` were swallowed by the help (nvitop returns on any key). A key the
    dashboard has closes the help and does what it says; the help's own keys (q, esc, ?)
    only close it, and the scroll keys scroll it."""
    from gputop.tui.screens.modals import HelpScreen

    app = make_app("training")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        theme = app.theme
        for key, done in (("p", lambda: app.sampler.paused), ("t", lambda: app.theme != theme)):
            await pilot.press("question_mark")
            await settle(pilot)
            await pilot.press("down")
            await settle(pilot)
            assert isinstance(app.screen, HelpScreen)  # scrolled, still open
            await pilot.press(key)
            await settle(pilot)
            assert not isinstance(app.screen, HelpScreen) and done(), key
        await pilot.press("question_mark")
        await settle(pilot)
        await pilot.press("q")
        await settle(pilot)
        assert app.is_running and not isinstance(app.screen, HelpScreen)
