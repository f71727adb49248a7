"""The footer: one widget drawing one line (#26: Textual's was a container of ~20 styled key
widgets, 1.35 MB of RSS at 8x32), drawn again only when the keys it shows change (Textual's
rebuilt all its key widgets, and laid the screen out again, on every focus change and every
screen shown)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding

from gputop.tui.screens.process_view import ProcessView
from gputop.tui.widgets.footer import KeyFooter
from tests.support.demo import advance
from tests.support.tui import make_app, screen_text, settle


def count_shows(monkeypatch) -> list[KeyFooter]:
    """Record each footer that takes new keys to draw."""
    shows: list[KeyFooter] = []
    real = KeyFooter._show

    def counted(self, keys):
        shows.append(self)
        real(self, keys)

    monkeypatch.setattr(KeyFooter, "_show", counted)
    return shows


async def test_the_footer_is_one_widget_drawing_its_keys_on_one_line():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        footer = app.screen.query_one(KeyFooter)
        assert not footer.children and footer.region.height == 1
        line = screen_text(app).splitlines()[-1]
        assert line.startswith(" q quit  ? help  p pause ") and line.endswith("▏^p palette ")


async def test_back_on_the_dashboard_its_footer_is_not_drawn_anew(monkeypatch):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        dashboard = app.screen
        shows = count_shows(monkeypatch)
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ProcessView)
        await pilot.press("q")
        await settle(pilot)
        assert app.screen is dashboard
        assert dashboard.query_one(KeyFooter) not in shows  # the same keys: not taken again
        assert "/ filter" in screen_text(app).splitlines()[-1]


async def test_each_screen_shows_its_own_keys():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "back" in footer and "/ filter" not in footer
        await pilot.press("q")
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "/ filter" in footer and "back" not in footer


async def test_a_screen_opened_the_first_time_has_its_keys_from_its_first_frame(monkeypatch):
    """#26: Textual's footer composed empty on a new screen and rebuilt after its first frame:
    the process view's keys came 40-50 ms after the view itself."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        shows = count_shows(monkeypatch)
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ProcessView)
        assert "back" in screen_text(app).splitlines()[-1]
        assert shows == [app.screen.query_one(KeyFooter)]  # once, for its first frame


async def test_a_click_on_a_key_runs_it():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        x = screen_text(app).splitlines()[-1].index("d details")
        await pilot.click(KeyFooter, offset=(x + 4, 0))  # on its description
        await settle(pilot)
        assert isinstance(app.screen, ProcessView)


class _Keys(App):
    BINDINGS = [Binding("a", "count('a')", "one"), Binding("b", "count('b')", "two")]

    def __init__(self) -> None:
        super().__init__()
        self.ran: list[str] = []
        self.bells = 0

    def compose(self) -> ComposeResult:
        yield KeyFooter()

    def action_count(self, key: str) -> None:
        self.ran.append(key)

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        return None if parameters == ("b",) else True  # b: shown, disabled

    def bell(self) -> None:
        self.bells += 1


async def test_a_click_on_a_disabled_key_rings_and_runs_nothing_and_between_keys_nothing():
    app = _Keys()
    async with app.run_test(size=(40, 3)) as pilot:
        await settle(pilot)
        assert screen_text(app).splitlines()[-1].startswith(" a one  b two ")
        await pilot.click(KeyFooter, offset=(7, 0))  # ` b two `
        await pilot.click(KeyFooter, offset=(20, 0))  # no key there
        await settle(pilot)
        assert app.ran == [] and app.bells == 1
        await pilot.click(KeyFooter, offset=(1, 0))
        await settle(pilot)
        assert app.ran == ["a"]


async def test_hovering_a_key_highlights_its_cells_only():
    app = _Keys()
    async with app.run_test(size=(40, 3)) as pilot:
        await settle(pilot)
        footer = app.query_one(KeyFooter)
        before = [segment.style for segment in footer.render_line(0)]
        await pilot.hover(KeyFooter, offset=(1, 0))
        await settle(pilot)
        after = footer.render_line(0)
        hovered = [s.style for s in after][:2]  # ` a ` and `one `
        assert hovered != before[:2] and [s.style for s in after][2:] == before[2:]
