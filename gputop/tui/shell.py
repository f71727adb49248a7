"""The app shell the dashboard and the cluster view share: themes and NO_COLOR, theme cycling, the
filter box, the help screen and the command palette, the last three derived from the app's action
registry (:mod:`gputop.tui.actions`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import ClassVar, TypeVar

from rich.cells import cached_cell_len
from textual.app import SystemCommand
from textual.markup import escape
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import Input

from gputop.tui import actions
from gputop.tui.actions import Action
from gputop.tui.stylesheet import ThemedStylesheet, theme_variables
from gputop.tui.terminal import TerminalApp
from gputop.tui.text.no_color import no_color
from gputop.tui.themes import APP_VARIABLES, install_themes
from gputop.tui.widgets.footer import KeyFooter

KeptScreen = TypeVar("KeptScreen", bound=Screen)  # a screen built once, shown again

# When the next theme's CSS is parsed (about 10 ms) after a `t`: once its frame is out. Not
# before the first `t`: its rules, kept for as long as the app runs, are 0.4 MB that a
# dashboard nobody themes does not need (#26); the first `t` parses its theme itself.
PREPARE_AFTER_KEY_S = 0.5
THEME_SAID_S = 3.0  # how long the footer names the theme a `t` picked
# Rich keeps the width of every string measured, up to 4096 of them, and Textual measures each
# run of a line it crops or divides: lines drawn once, 40 a second at 8 GPUs x 32 processes,
# a MB held from the first minutes of a dashboard on (#26). Measuring again is cheap.
MEASURES_KEPT_S = 10.0


class ShellApp(TerminalApp):
    """A gputop app: its ``KEY_HELP`` actions give its help rows and palette (its ``BINDINGS`` are
    ``actions.bindings(KEY_HELP)``); it composes an ``Input`` with id ``filter`` and answers the
    filter hooks below."""

    # The palette's list keeps its scrollbar: Textual adds it once the list's length is known, a
    # frame after the list, which made ctrl+p settle a frame later (#26).
    DEFAULT_CSS = """
    CommandList { overflow-y: scroll; }
    """

    KEY_HELP: ClassVar[tuple[Action, ...]] = ()  # what `?` lists and the palette offers
    readonly = False  # --readonly: the actions that change something are gone

    def __init__(self, *, theme: str | None = None, themes: Iterable[Theme] | None = None,
                 theme_warnings: Iterable[str] = ()) -> None:
        refused = no_color()
        if not refused:  # an empty NO_COLOR refuses nothing; Textual would count it
            os.environ.pop("NO_COLOR", None)
        # Textual reads NO_COLOR in App.__init__ (and removes it from the environment), before
        # our themes exist; with ansi_color it drops colours (NoColor) instead of turning them
        # into shades of grey, which drew the 16-colour theme's terminal-default colours as black
        # on black.
        super().__init__(ansi_color=True if refused else None)
        # no source is in Textual's yet: its app adds them as it starts
        self.themed_css = self.stylesheet = ThemedStylesheet(variables=self.get_css_variables())
        self.app_themes: list[str] = []
        self.theme_warnings: list[str] = []
        install_themes(self, themes, theme_warnings, theme, refused)

    def on_mount(self) -> None:
        """Forget the strings Rich measured, every ``MEASURES_KEPT_S`` from now on."""
        self.set_interval(MEASURES_KEPT_S, self._forget_measures)

    def _forget_measures(self) -> None:
        """Forget the strings Rich measured (see MEASURES_KEPT_S)."""
        cached_cell_len.cache_clear()

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(APP_VARIABLES)

    def get_css_variables(self) -> dict[str, str]:
        """Return the current theme's variables (built as for the theme prepared ahead)."""
        self.theme_variables = theme_variables(self.current_theme,
                                               self.get_theme_variable_defaults())
        return self.theme_variables

    def warn_of_themes(self) -> None:
        """Show the warnings of the user themes that could not be used (once mounted)."""
        for warning in self.theme_warnings:
            self.notify(warning, severity="warning", timeout=8)

    @property
    def filter_box(self) -> Input:
        """Return the app's filter box (the ``Input`` with id ``filter`` it composes)."""
        return self.query_one("#filter", Input)

    # ------------------------------------------------------------------ themes
    def action_cycle_theme(self) -> None:
        self.theme = self._next_theme()
        self.theme_cycled()
        self.say("cycle_theme", f"theme: {self.theme}", THEME_SAID_S)
        self.prepare_next_theme(PREPARE_AFTER_KEY_S)

    def say(self, action: str, text: str, seconds: float) -> None:
        """Tell what ``action``'s key just did: in the key's place in the screen's footer, drawn
        in the same frame as what it changed (a toast is mounted a frame later, #26); as a toast
        where the screen has no footer (a dialog) or does not draw that key whole."""
        footers = self.screen.query(KeyFooter)
        if not (footers and footers.first().say(action, text, seconds)):
            self.notify(text, timeout=seconds)

    def theme_cycled(self) -> None:
        """Follow a theme just picked with ``t`` (what the CSS does not redraw itself)."""

    def prepare_next_theme(self, delay: float = PREPARE_AFTER_KEY_S) -> None:
        """Parse the CSS of the theme the next `t` shows, ``delay`` seconds from now (idle
        time), so that the `t` only restyles and redraws (#26); only that theme is kept ahead."""

        def prepare() -> None:
            theme = self.get_theme(self._next_theme()) if self.is_running else None
            if theme is not None:
                self.themed_css.prepare(theme_variables(theme, self.get_theme_variable_defaults()))

        # a Textual timer divides by its interval when it runs late: never 0
        self.set_timer(max(delay, 0.001), prepare)

    def _next_theme(self) -> str:
        """Return the theme after the current one in the cycle of `t`."""
        names = self.app_themes
        cur = names.index(self.theme) if self.theme in names else -1
        return names[(cur + 1) % len(names)]

    # ------------------------------------------------------------------ filter
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """Return False for a key that opens a text box (`/`, `g`) while a text box has the
        keys: it is text there (its binding takes precedence over the focused widget, see
        actions.box_key)."""
        return not (action in actions.box_actions(self.KEY_HELP)
                    and isinstance(self.focused, Input))

    def action_filter(self) -> None:
        box = self.filter_box
        box.add_class("-shown")
        # Now, not after this key's turn (Widget.focus defers): the keys typed after `/` in the
        # same read (fast typing over SSH, a paste) are already queued and must reach the box,
        # not the dashboard's bindings (`s` would open the saturation panel).
        self.screen.set_focus(box)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.filter_changed(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            event.input.remove_class("-shown")
            self.filter_kept()

    def action_clear_filter(self) -> None:
        if self.filter_to_clear():
            box = self.filter_box
            box.value = ""
            box.remove_class("-shown")
            self.filter_changed("")
            self.filter_kept()

    def filter_changed(self, text: str) -> None:
        """Filter the app's view by ``text``, as typed so far."""
        raise NotImplementedError

    def filter_kept(self) -> None:
        """Go back to the view once the filter box closed (enter or esc)."""
        raise NotImplementedError

    def filter_to_clear(self) -> bool:
        """Return whether esc has a filter to clear (this default: always)."""
        return True

    # ------------------------------------------------------------------ help and palette
    def offers(self, action: Action) -> bool:
        """Return whether ``action`` exists here (the help lists it, the palette offers it)."""
        return not (action.changes and self.readonly)

    def help_heading(self, group: str) -> str:
        """Return the help's heading over ``group``'s rows."""
        return group

    def help_text(self, action: Action) -> str:
        """Return what the help says ``action``'s keys do."""
        return action.description

    def help_rows(self) -> list[tuple[str, str]]:
        """Return the help's rows: (keys, what they do), and ("", heading) over each group (a
        group's rows together, though its actions need not be: see actions.DASHBOARD)."""
        groups: dict[str, list[tuple[str, str]]] = {}  # in the order each first appears
        for action in self.KEY_HELP:
            if self.offers(action):
                groups.setdefault(action.group, []).append((action.keys, self.help_text(action)))
        return [row for group, rows in groups.items()
                for row in [("", self.help_heading(group)), *rows]]

    def action_help(self) -> None:
        from gputop.tui.screens.modals import HelpScreen

        self.show_kept("help", HelpScreen, lambda: HelpScreen(self.help_rows()),
                       lambda screen: screen.show(self.help_rows()))

    def show_kept(self, name: str, kind: type[KeptScreen], build: Callable[[], KeptScreen],
                   again: Callable[[KeptScreen], None]) -> None:
        """Show the screen kept installed as ``name``: made by ``build`` at its first open and
        kept (building its widgets and their CSS cost most of opening it, #26), brought up to
        date by ``again`` at each later open; nothing while it is on the stack already (the
        palette can ask twice)."""
        if self.is_screen_installed(name):
            screen = self.get_screen(name)
            assert isinstance(screen, kind)
            if screen in self.screen_stack:
                return
            again(screen)
        else:
            screen = build()
            self.install_screen(screen, name)
        self.push_screen(screen)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Offer the app's own actions by name, with their keys (Textual's theme picker would
        offer themes that lack our variables)."""
        for action in self.KEY_HELP:
            if not self.offers(action):
                continue
            for key in action.bound:
                # the title already says what it does: the help line only adds the key
                yield SystemCommand(action.palette_title(key), escape(f"key {action.keys}"),
                                    lambda a=key.action: self.run_action(a))
