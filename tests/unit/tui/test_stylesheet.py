"""The apps' stylesheet, parsed once per theme: no theme is parsed ahead before the first `t`, a
`t` to the theme prepared ahead parses no CSS, and a theme reached with `t` is drawn as a
dashboard started in it."""

from __future__ import annotations

import textual.css.stylesheet

from gputop.tui import shell
from gputop.tui.shell import PREPARE_AFTER_KEY_S
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


async def test_t_to_the_theme_prepared_ahead_parses_no_css(monkeypatch):
    """#26: each `t` reparsed every CSS source, a third of its time before its frame; the next
    theme is parsed in idle time after each `t`, and not before the first: a dashboard nobody
    themes does not hold a second theme's rules (0.4 MB)."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        parsed = count_parses(monkeypatch)
        await pilot.pause(2.5)  # the first samples drawn, the app idle
        assert parsed == []
        await pilot.press("t")  # parses its theme, each source once
        await settle(pilot)
        assert len(parsed) == len(set(parsed)) == len(app.stylesheet.source)
        await pilot.pause(PREPARE_AFTER_KEY_S + 0.2)  # the next theme, parsed in idle time
        parsed.clear()
        await pilot.press("t")
        await settle(pilot)
        assert app.theme == "high-contrast"
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
            app.prepare_next_theme(0)
            await pilot.pause(0.05)
            await pilot.press("t")
            await pilot.pause(0.1)
            await settle(pilot)
            assert app.theme == theme
            assert screen_styles(app) == started[theme], theme
