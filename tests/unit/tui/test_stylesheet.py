"""The apps' stylesheet, parsed once per theme and only the current theme's kept: a `t` parses
each CSS source once, idle time parses none, and a theme reached with `t` is drawn as a
dashboard started in it."""

from __future__ import annotations

import textual.css.stylesheet

from gputop.tui import shell
from tests.support.demo import advance
from tests.support.tui import make_app, screen_styles, settle


def count_parses(monkeypatch) -> list[str]:
    """Return a list that gets each CSS source Textual parses from now on."""
    parsed: list[str] = []
    real = textual.css.stylesheet.parse

    def counted(scope, css, *args, **kwargs):
        parsed.append(css)
        return real(scope, css, *args, **kwargs)

    monkeypatch.setattr(textual.css.stylesheet, "parse", counted)
    return parsed


async def test_t_parses_each_source_once_and_idle_time_parses_none(monkeypatch):
    """#26: each `t` reparsed every CSS source twice (at the theme, again at its notice); the
    rules are parsed once per theme. No theme is parsed ahead in idle time: its rules, kept for
    as long as the app runs, cost 0.4 MB for ~8 ms off a `t`."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        parsed = count_parses(monkeypatch)
        await pilot.pause(2.5)  # the first samples drawn and the app idle
        assert parsed == []
        await pilot.press("t")
        await settle(pilot)
        assert app.theme == "light"
        assert parsed and len(parsed) == len(set(parsed)) == len(app.stylesheet.source)
        parsed.clear()
        await pilot.pause(1.0)  # the `t`'s frame out, its notice up
        assert parsed == []


async def test_a_theme_reached_with_t_is_drawn_as_a_dashboard_started_in_it(monkeypatch):
    monkeypatch.setattr(shell, "THEME_SAID_S", 0.05)  # the footer's `t` names it, then not
    started = {}
    for theme in ("light", "high-contrast", "ansi", "dark"):
        app = make_app(theme=theme)
        async with app.run_test(size=(120, 40)) as pilot:
            advance(app, 2)
            await settle(pilot)
            started[theme] = screen_styles(app)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        for theme in ("light", "high-contrast", "ansi", "dark"):
            await pilot.press("t")
            await pilot.pause(0.1)
            await settle(pilot)
            assert app.theme == theme
            assert screen_styles(app) == started[theme], theme
