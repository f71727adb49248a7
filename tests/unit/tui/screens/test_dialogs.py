"""A dialog over the dimmed screen beneath it (screens/tinted.py): drawn as Textual draws a
ModalScreen, for a third of the cost (#26)."""

from __future__ import annotations

import re

import pytest

from gputop.tui.app import GputopApp
from gputop.tui.screens import tinted
from gputop.tui.screens.modals import ConfirmSignal, Dialog, HelpScreen
from tests.support.demo import advance
from tests.support.tui import LocalBackend, make_app, settle


def frame(app) -> str:
    """Return the whole frame, every cell's character and style (Textual's SVG export, less the
    ids it draws at random)."""
    return re.sub(r"terminal-\d+-", "terminal-", app.export_screenshot())


async def still_frame(app, pilot) -> str:
    """Return the frame once two in a row are the same: after a resize the dashboard beneath
    draws its cards for the new width over more than one frame."""
    last = frame(app)
    for _ in range(40):
        await pilot.pause(0.05)
        now = frame(app)
        if now == last:
            return now
        last = now
    raise AssertionError("the frame never held still")


def textual_draws(dialog: Dialog) -> None:
    """Let Textual draw ``dialog``'s background itself from now on."""
    dialog._tinted = lambda: None  # type: ignore[method-assign]
    dialog.refresh()


@pytest.mark.parametrize("theme, size", [("dark", (120, 40)), ("light", (80, 24)),
                                         ("ansi", (120, 40))])
async def test_a_dialog_draws_the_frame_textual_draws(theme, size, child):
    app = GputopApp(LocalBackend([child.pid]), autostart=False)  # a process `k` may signal
    async with app.run_test(size=size) as pilot:
        app.theme = theme
        app.sampler.tick()
        await settle(pilot)
        for key, kind in (("question_mark", HelpScreen), ("k", ConfirmSignal)):
            await pilot.press(key)
            await settle(pilot)
            dialog = app.screen
            assert isinstance(dialog, kind)
            ours = frame(app)
            textual_draws(dialog)
            await settle(pilot)
            assert frame(app) == ours, key
            await pilot.press("escape")
            await settle(pilot)


async def test_the_screen_beneath_is_tinted_when_the_dialog_is_drawn_anew_only(monkeypatch):
    tints: list[int] = []
    real = tinted.tinted

    def counted(strips, color, base):
        tints.append(len(strips))
        return real(strips, color, base)

    monkeypatch.setattr(tinted, "tinted", counted)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 3)
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        opened = len(tints)
        assert 1 <= opened <= 3  # the frames of an open in which Textual draws it all
        for _ in range(3):  # the help scrolls: frames of the dialog, the screen beneath the same
            await pilot.press("down")
            await settle(pilot)
        assert len(tints) == opened
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        ours = await still_frame(app, pilot)
        assert tints[-1] == 30  # the screen beneath, laid out again while covered
        textual_draws(app.screen)
        await settle(pilot)
        assert frame(app) == ours


def test_a_tint_works_out_each_style_once_as_textual_does(monkeypatch):
    from rich.segment import Segment
    from rich.style import Style
    from textual.color import Color
    from textual.renderables.background_screen import BackgroundScreen
    from textual.strip import Strip

    styles = [Style.parse(s) for s in ("#d0d4da on #1c2229", "bold #335578 on #1c2229",
                                       "on #161a1f", "#606469")]
    strips = [Strip([Segment(f"{y}:{x}", styles[(x + y) % len(styles)]) for x in range(30)])
              for y in range(40)]
    color, base = Color(22, 26, 31, 0.6), Style.parse("#e0e0e0 on #161a1f")
    asked: list[Style | None] = []
    real = BackgroundScreen.process_segments

    def process_segments(segments, tint):
        segments = list(segments)
        asked.extend(s.style for s in segments)
        return real(segments, tint)

    monkeypatch.setattr(BackgroundScreen, "process_segments", process_segments)
    got = tinted.tinted(strips, color, base)
    assert sorted(map(str, asked)) == sorted(map(str, styles))  # 4 styles, 1200 segments
    monkeypatch.setattr(BackgroundScreen, "process_segments", real)
    for ours, strip in zip(got, strips, strict=True):
        textual = [Segment(s.text, base + s.style) for s in real(list(strip), color)]
        assert list(ours) == textual
