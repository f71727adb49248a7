"""The line-rendering widgets (GPU cards, process table, header, host line, hint bar) hand the
compositor their own lines (widgets/strips.py ``DirectLines``), skipping Textual's styles cache
while their CSS draws nothing around the content: the cells must be those Textual would draw,
whole or cropped, filtered or not, and Textual draws them once a style asks for a border or
padding."""

from __future__ import annotations

import pytest
from textual.filter import Monochrome
from textual.geometry import Region
from textual.strip import Strip

from gputop.tui.app import GputopApp
from gputop.tui.text.wants import DASHBOARD
from gputop.tui.widgets.processes import ProcessTable
from gputop.tui.widgets.strips import DirectLines
from tests.support.demo import demo_backend
from tests.support.tui import settle


def dashboard(scenario: str = "training") -> GputopApp:
    backend = demo_backend(scenario)
    return GputopApp(backend, autostart=False, first=backend.sample(wants=DASHBOARD))


def cells(strips: list[Strip]) -> list[list]:
    return [list(strip) for strip in strips]


def textual_lines(widget: DirectLines, crop: Region) -> list[Strip]:
    return widget._styles_cache.render_widget(widget, crop)


def crops(widget: DirectLines) -> list[Region]:
    width, height = widget.size
    top = min(1, height - 1)  # the compositor asks only for lines inside the widget
    return [Region(0, 0, width, height), Region(3, top, width - 9, height - top)]


async def shown_widgets(pilot) -> list[DirectLines]:
    await settle(pilot)
    return [w for w in pilot.app.screen.query("*") if isinstance(w, DirectLines) and w.size.area]


async def test_the_lines_are_the_cells_textual_would_draw_and_skip_its_cache():
    app = dashboard()
    async with app.run_test(size=(120, 40)) as pilot:
        shown = await shown_widgets(pilot)
        assert {type(w).__name__ for w in shown} == {"GpuPanel", "ProcessTable", "Header",
                                                     "HostLine", "HintBar"}
        for widget in shown:
            for crop in crops(widget):
                expected = cells(textual_lines(widget, crop))
                widget._styles_cache.render_widget = None  # not called on this path
                assert cells(widget.render_lines(crop)) == expected, (type(widget), crop)
                del widget._styles_cache.render_widget


async def test_a_line_filter_applies_as_textual_would_apply_it():
    app = dashboard()
    async with app.run_test(size=(120, 40)) as pilot:
        app._filters.append(Monochrome())
        for widget in await shown_widgets(pilot):
            crop = crops(widget)[0]
            assert cells(widget.render_lines(crop)) == cells(textual_lines(widget, crop))


@pytest.mark.parametrize("rule", ["padding: 0 2", "border: round red", "outline: solid red",
                                  "tint: red 30%", "text-opacity: 50%", "opacity: 50%"])
async def test_a_style_that_draws_around_or_over_the_lines_is_drawn_by_textual(rule):
    app = dashboard()
    async with app.run_test(size=(120, 40)) as pilot:
        for widget in await shown_widgets(pilot):
            widget.set_styles(rule + ";")
        await settle(pilot)
        for widget in await shown_widgets(pilot):
            crop = crops(widget)[0]
            assert cells(widget.render_lines(crop)) == cells(textual_lines(widget, crop)), (
                type(widget).__name__)


async def test_a_scrolled_table_draws_the_rows_textual_would_draw():
    app = dashboard("crowded")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        table = app.query_one(ProcessTable)
        assert table.max_scroll_y > 0, "the rows fit: nothing to scroll"
        table.scroll_to(y=table.max_scroll_y, animate=False)
        await settle(pilot)
        crop = crops(table)[0]
        assert table.scroll_y > 0
        assert cells(table.render_lines(crop)) == cells(textual_lines(table, crop))
