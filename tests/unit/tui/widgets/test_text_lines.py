"""The one-line widgets (header, host line, hint bar) draw their Rich Text as Strips of their
own (widgets/strips.py ``TextLines``): the same cells as Textual's drawing (the SVG snapshots
hold that), converted once per distinct line, and Textual's drawing again while a selection
is on the line."""

from __future__ import annotations

from textual.geometry import Offset
from textual.selection import Selection

from gputop.tui.app import GputopApp
from gputop.tui.widgets.header import Header
from gputop.tui.widgets.hintbar import HintBar
from gputop.tui.widgets.hostline import HostLine
from tests.support.demo import demo_backend


def dashboard() -> GputopApp:
    return GputopApp(demo_backend("training"), autostart=False)


async def test_an_unchanged_line_is_not_drawn_again_on_a_refresh():
    async with dashboard().run_test(size=(120, 40)) as pilot:
        header = pilot.app.query_one(Header)
        header.set(host="node-a", gpus=8)
        await pilot.pause()
        first = header.render_line(0)
        header.refresh()  # a refresh with the same text: Textual would convert it again
        assert header.render_line(0) is first
        header.set(clock=1e9)  # a new clock: a new line
        assert header.render_line(0) is not first
        assert "node-a" in header.render_line(0).text


async def test_a_selected_line_is_drawn_by_textual_with_its_highlight():
    async with dashboard().run_test(size=(120, 40)) as pilot:
        header = pilot.app.query_one(Header)
        header.set(host="node-a", gpus=8)
        await pilot.pause()
        plain = header.render_line(0)
        pilot.app.screen.selections = {header: Selection.from_offsets(Offset(0, 0), Offset(6, 0))}
        await pilot.pause()
        selected = header.render_line(0)
        assert selected.text == plain.text
        assert [s.style for s in selected] != [s.style for s in plain]  # the highlight


async def test_a_new_theme_redraws_the_line_in_its_colours():
    async with dashboard().run_test(size=(120, 40)) as pilot:
        app = pilot.app
        widgets = (app.query_one(Header), app.query_one(HostLine), app.query_one(HintBar))
        before = [list(widget.render_line(0)) for widget in widgets]
        app.theme = next(name for name in app.available_themes if name != app.theme)
        await pilot.pause()
        for widget, old in zip(widgets, before, strict=True):
            drawn = list(widget.render_line(0))
            widget._drawn = widget._base = None  # what it draws with nothing kept
            assert drawn == list(widget.render_line(0)) != old
