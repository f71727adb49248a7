"""The footer: one widget drawing one line (#26: Textual's was a container of ~20 styled key
widgets, 1.35 MB of RSS at 8x32), drawn again only when the keys it shows change (Textual's
rebuilt all its key widgets, and laid the screen out again, on every focus change and every
screen shown)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding

from gputop.tui import shell
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


async def test_t_names_its_theme_in_its_own_key_for_a_while_and_raises_no_toast(monkeypatch):
    """#26: the theme's name was a toast, mounted a frame after the new colours (`t` settled in
    54-61 ms, its colours in 28): the footer's `t` says it, drawn with the colours."""
    monkeypatch.setattr(shell, "THEME_SAID_S", 0.2)
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        advance(app, 2)
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        assert app.theme == "light"
        assert " t theme: light " in screen_text(app).splitlines()[-1]
        assert not app.screen.query("Toast")
        await pilot.pause(0.3)
        await settle(pilot)
        line = screen_text(app).splitlines()[-1]
        assert " t theme " in line and "light" not in line


async def test_the_key_that_says_what_it_did_is_highlighted_as_under_the_mouse():
    app = _Keys()
    async with app.run_test(size=(40, 3)) as pilot:
        await settle(pilot)
        footer = app.query_one(KeyFooter)
        await pilot.hover(KeyFooter, offset=(1, 0))
        await settle(pilot)
        hovered = [s.style for s in footer.render_line(0)][:2]
        await pilot.hover(KeyFooter, offset=(20, 0))  # no key there
        assert footer.say("count('a')", "one: done", 5)
        await settle(pilot)
        said = footer.render_line(0)
        assert said.text.startswith(" a one: done  b two ")
        assert [s.style for s in said][:2] == hovered


async def test_where_no_footer_draws_the_key_a_toast_says_it():
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        advance(app, 2)
        await settle(pilot)
        await pilot.press("s")  # the saturation panel: no footer of its own
        await settle(pilot)
        assert not app.screen.query(KeyFooter)
        await pilot.press("t")
        await pilot.pause(0.1)
        assert [str(toast.render()) for toast in app.screen.query("Toast")] == ["theme: light"]
    app = _Keys()
    async with app.run_test(size=(20, 3)) as pilot:  # ` b two ` is cut by the palette key
        await settle(pilot)
        footer = app.query_one(KeyFooter)
        assert footer.say("count('a')", "one", 5)
        assert not footer.say("count('b')", "two", 5)
