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
    """Textual's stylesheet, keeping the rules parsed for the current theme's variables and
    for those prepared ahead: a reparse with them only parses the sources added since (a screen
    opened)."""

    def __init__(self, *, variables: dict[str, str] | None = None) -> None:
        super().__init__(variables=variables)
        self._per_theme: dict[Variables, Stylesheet] = {}
        self._current: Variables = tuple((variables or {}).items())

    def set_variables(self, variables: dict[str, str]) -> None:
        super().set_variables(variables)
        self._current = tuple(variables.items())

    def prepare(self, variables: dict[str, str]) -> None:
        """Parse the sources with ``variables`` now (idle time), for the reparse that needs
        them (a `t` later); what was prepared before for other variables is dropped."""
        key = tuple(variables.items())
        self._rules_of(key)
        self._keep(key, self._current)

    def _rules_of(self, key: Variables) -> list[RuleSet]:
        """Return the rules of this stylesheet's sources parsed with the variables ``key``; a
        source parsed before with them is not parsed again (the kept sheet's own cache)."""
        sheet = self._per_theme.get(key)
        if sheet is None:
            sheet = self._per_theme[key] = Stylesheet(variables=dict(key))
        if sheet.source != self.source:
            sheet.source = dict(self.source)
            try:
                sheet.parse()
            except Exception:
                # as Textual's reparse: not parsed again before the app ends; nothing half-parsed kept
                self._invalid_css.update(sheet._invalid_css)
                del self._per_theme[key]
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
        self._keep(self._current)

    reparse = parse  # Textual's reparse parses every source in a new stylesheet

    def _keep(self, *keys: Variables) -> None:
        """Drop the rules kept for any variables but ``keys`` (each theme's are 0.4 MB)."""
        self._per_theme = {k: sheet for k, sheet in self._per_theme.items() if k in keys}
