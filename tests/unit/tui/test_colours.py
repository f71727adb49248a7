"""Colour rules: every shipped theme keeps them as data, and the drawn screen shows no text in its
own background colour, in every theme and under NO_COLOR."""

from __future__ import annotations

import sys

import pytest

from gputop.tui import themes
from gputop.tui.app import GputopApp
from gputop.tui.text import colour_rules
from tests.support.demo import advance, demo_backend
from tests.support.tui import screen_styles

tomllib = __import__("tomllib" if sys.version_info >= (3, 11) else "tomli")
SHIPPED = ("dark", "light", "high-contrast", "ansi")


def theme_colours(name: str) -> dict[str, str]:
    from gputop.core import datafiles

    data = tomllib.loads(datafiles.read_text("themes", f"{name}.toml"))
    return {**data["colors"], **data["variables"]}


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_theme_keeps_the_contrast_rules(name):
    assert colour_rules.violations(theme_colours(name)) == []


def test_the_rules_catch_low_contrast_and_text_in_its_own_background():
    colours = theme_colours("dark")
    assert colour_rules.violations({**colours, "muted": colours["background"]})
    ansi = theme_colours("ansi")
    assert colour_rules.violations({**ansi, "selected": ansi["primary"]}) == [
        "primary on selected: both ansi_blue"]
    assert round(colour_rules.contrast((0, 0, 0), (255, 255, 255)), 1) == 21.0


def test_app_defaults_are_the_dark_theme():
    # A user theme that leaves a variable out falls back to these: they keep the rules too.
    assert colour_rules.violations({**theme_colours("dark"), **themes.APP_VARIABLES}) == []


def invisible_cells(app) -> list[str]:
    """Characters drawn in the same colour as their background (after NO_COLOR's filter)."""
    found = []
    for y, row in enumerate(screen_styles(app)):
        for text, style in row:
            if style is None or not text.strip():
                continue
            fg, bg = style.color, style.bgcolor
            if style.reverse:
                fg, bg = bg, fg
            if fg is not None and bg is not None and fg == bg and not fg.is_default:
                found.append(f"line {y}: {text.strip()!r} in {fg.name} on {bg.name}")
    return found


@pytest.mark.parametrize("name,no_color", [(n, False) for n in SHIPPED] + [(None, True)])
async def test_no_text_is_drawn_in_its_own_background(name, no_color, monkeypatch):
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    app = GputopApp(demo_backend("straggler"), autostart=False, theme=name)
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 12)
        await pilot.press("greater_than_sign")  # a selected card that is not the first
        await pilot.pause()
        await pilot.pause()
        assert invisible_cells(app) == []
        if no_color:
            # Emphasis survives without colour: the selected GPU and the table's cursor row.
            segments = [run for row in screen_styles(app) for run in row]
            assert all(style is None or (style.color is None or style.color.is_default)
                       for _, style in segments)
            assert any(style and style.reverse and " 1 H100" in text for text, style in segments)
            assert any(style and style.reverse and "carol" in text for text, style in segments)


class StillCluster:
    """A cluster transport double whose nodes never change (gputop.cluster.source.ClusterSource)."""

    version = 0
    problem = None

    def __init__(self, statuses) -> None:
        self._statuses = list(statuses)

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def statuses(self):
        return list(self._statuses)

    def status(self, host: str):
        return next(s for s in self._statuses if s.host == host)

    def wait(self, predicate, timeout: float) -> bool:
        return predicate(self.statuses())

    def settled(self, statuses) -> bool:
        return True

    def detail(self, hosts=(), every: bool = False) -> None:
        pass  # every node comes whole


async def test_the_cluster_view_under_no_color_draws_no_colour_and_no_unseen_text(monkeypatch):
    """NO_COLOR in the cluster view as in the dashboard: the ANSI theme with Textual's colour
    filter dropping colours; the cluster view once turned them into greys instead, which drew
    the ANSI theme's terminal-default colours as black on black."""
    import time

    from gputop.cluster.node import NodeStatus
    from gputop.tui.cluster import ClusterApp

    monkeypatch.setenv("NO_COLOR", "1")
    backend = demo_backend("training")
    now = time.monotonic()
    cluster = StillCluster([
        NodeStatus("node-a", "ok", "agent", "", backend.sample(), now, seq=1),
        NodeStatus("node-b", "unreachable", "agent", "Connection refused", seq=1),
    ])
    app = ClusterApp(cluster, interval=1.0, refresh_s=3600)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert app.theme == "ansi"
        assert invisible_cells(app) == []
        segments = [run for row in screen_styles(app) for run in row]
        assert any("node-b" in text for text, _ in segments)
        assert all(style is None or style.color is None or style.color.is_default
                   for _, style in segments)


def test_no_color_is_set_and_not_empty():
    from gputop.tui.text.no_color import no_color

    assert no_color({"NO_COLOR": "1"}) and no_color({"NO_COLOR": "0"})
    assert not no_color({"NO_COLOR": ""}) and not no_color({})


async def test_an_empty_no_color_leaves_the_dashboard_in_colour(monkeypatch):
    """no-color.org: an empty NO_COLOR refuses nothing, though Textual would count it."""
    monkeypatch.setenv("NO_COLOR", "")
    app = GputopApp(demo_backend("training"), autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.theme == "dark" and not app.no_color


