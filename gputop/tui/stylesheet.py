"""The apps' stylesheet, parsed once per theme (#26: `t` answered in 53-82 ms).

Textual reparses every CSS source each time the theme changes, about a third of what `t` costs
before its frame; the rest is restyling the widgets and drawing them, which a new theme needs.
The rules parsed for a theme's variables are kept here, and a shell app parses the theme the next
`t` shows in idle time ahead (after its first frame, and after each `t`), so that a `t` only
restyles and draws.
"""

from __future__ import annotations

from textual.css.model import RuleSet
from textual.css.stylesheet import Stylesheet
from textual.theme import Theme

# A theme's variables, in the order Textual builds them: the key of its parsed rules.
Variables = tuple[tuple[str, str], ...]


def theme_variables(theme: Theme, defaults: dict[str, str]) -> dict[str, str]:
    """Return the CSS variables of ``theme`` over the app's ``defaults``, as Textual's
    ``App.get_css_variables`` builds them for the current theme."""
    generated = {**theme.to_color_system().generate(), **theme.variables}
    return {**defaults, **generated}


class ThemedStylesheet(Stylesheet):
    """Textual's stylesheet, keeping the rules parsed for the current theme's variables: a
    reparse with them only parses the sources added since (a screen opened). Only the current
    theme's are kept: another theme's parse costs ~8 ms at its `t`, and holding it ahead cost
    0.4 MB for as long as the app runs (#26)."""

    def __init__(self, *, variables: dict[str, str] | None = None) -> None:
        super().__init__(variables=variables)
        self._parsed: tuple[Variables, Stylesheet] | None = None  # the variables, their sheet
        self._current: Variables = tuple((variables or {}).items())

    def set_variables(self, variables: dict[str, str]) -> None:
        super().set_variables(variables)
        self._current = tuple(variables.items())

    def _rules_of(self, key: Variables) -> list[RuleSet]:
        """Return the rules of this stylesheet's sources parsed with the variables ``key``; a
        source parsed before with them is not parsed again (the kept sheet's own cache)."""
        if self._parsed is None or self._parsed[0] != key:
            self._parsed = (key, Stylesheet(variables=dict(key)))
        sheet = self._parsed[1]
        if sheet.source != self.source:
            sheet.source = dict(self.source)
            try:
                sheet.parse()
            except Exception:
                # as Textual's reparse: not parsed again before the app ends; nothing half-parsed kept
                self._invalid_css.update(sheet._invalid_css)
                self._parsed = None
                raise
        return sheet.rules

    def parse(self) -> None:
        """Take the rules for the current variables from the kept ones, parsing only the sources
        new to them (Textual parses every source after a theme change: at a `t`, and again
        at the next new widget, such as the `t`'s notice); a CSS error raises, as Textual's
        does, with this stylesheet unchanged."""
        self._rules = self._rules_of(self._current)
        self._rules_map = None
        self._require_parse = False

    reparse = parse  # Textual's reparse parses every source in a new stylesheet
