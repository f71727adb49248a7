"""Dashboard themes: TOML files loaded into Textual `Theme`s.

Shipped themes live in the top-level `themes/` folder (packaged as `gputop/themes`); users add
their own in `$XDG_CONFIG_HOME/gputop/themes/*.toml` (default `~/.config/gputop/themes`). A user
theme with a shipped theme's name replaces it. Every theme defines the app's own variables
(`APP_VARIABLES`), so the CSS names `$gauge-low` and friends and never a colour.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from gputop.config.dashboard import DashboardConfig
from gputop.core import datafiles, userfile
from gputop.core.errors import UsageError

DEFAULT_THEME = "dark"
NO_COLOR_THEME = "ansi"
SHIPPED_ORDER = ("dark", "light", "high-contrast", "ansi")


def _dark_variables() -> dict[str, str]:
    """Read the app's own variables from the default theme's file, the one place they are
    declared: a new variable is added to dark.toml (and every other shipped theme, which a test
    checks) and nowhere else."""
    text = datafiles.read_text("themes", f"{DEFAULT_THEME}.toml")
    return dict(userfile.load_toml(text)["variables"])


# The app's own variables with the fallback used when a theme leaves one out: the dark theme's
# values (a theme file should define them all).
APP_VARIABLES: dict[str, str] = _dark_variables()

_COLOR_KEYS = ("primary", "secondary", "accent", "foreground", "background", "surface", "panel",
               "boost", "warning", "error", "success")
_KEYS = ("name", "dark", "ansi", "colors", "variables")  # a theme file's top-level keys


@dataclass(frozen=True)
class ThemeSource:
    theme: Theme
    origin: str  # "shipped" or the user file's path


def user_theme_dir(environ: dict[str, str] | None = None) -> Path:
    from gputop.config.settings import config_dir

    return config_dir(environ) / "themes"


def _check_color(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{where}: a colour must be a string, got {value!r}")
    try:
        Color.parse(value)
    except ColorParseError:
        raise UsageError(f"{where}: not a colour: {value!r}") from None
    return value


def parse_theme(data: dict, origin: str, fallback_name: str) -> Theme:
    """Turn one theme document into a Theme. Raises UsageError naming what is wrong."""
    unknown_keys = [k for k in data if k not in _KEYS]
    if unknown_keys:
        raise UsageError(f"theme {origin}: unknown key {userfile.one_line(repr(unknown_keys[0]))}"
                         f" (known: {', '.join(_KEYS)})")
    name = data.get("name", fallback_name)
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"theme {origin}: 'name' must be a non-empty string")
    for flag in ("dark", "ansi"):
        if not isinstance(data.get(flag, False), bool):
            raise UsageError(f"theme {origin}: '{flag}' must be true or false")
    colors = data.get("colors", {})
    variables = data.get("variables", {})
    if not isinstance(colors, dict) or not isinstance(variables, dict):
        raise UsageError(f"theme {origin}: [colors] and [variables] must be tables")
    unknown = sorted(set(colors) - set(_COLOR_KEYS))
    if unknown:
        raise UsageError(f"theme {origin}: unknown colour key(s) "
                         f"{userfile.one_line(', '.join(unknown))}")
    if "primary" not in colors:
        raise UsageError(f"theme {origin}: [colors] needs at least 'primary'")
    kwargs: dict[str, Any] = {k: _check_color(v, f"theme {origin}: colors.{k}")
                              for k, v in colors.items()}
    merged = dict(APP_VARIABLES)
    for key, value in variables.items():
        merged[str(key)] = _check_color(value, f"theme {origin}: variables."
                                               f"{userfile.one_line(str(key), 60)}")
    return Theme(
        name=name,
        dark=data.get("dark", True),
        ansi=data.get("ansi", False),
        variables=merged,
        **kwargs,
    )


def _parse_text(text: str, origin: str, fallback_name: str) -> Theme:
    try:
        data = userfile.load_toml(text)
    except userfile.FileProblem as exc:
        raise UsageError(f"theme {origin}: {exc}") from None
    return parse_theme(data, origin, fallback_name)


def load_theme_file(path: Path) -> Theme:
    """Read one user theme; a file that is not a readable, small TOML theme (a FIFO, /dev/zero,
    a folder, bytes that are not UTF-8, deep nesting) is one UsageError line naming it. Raises
    FileNotFoundError where nothing is at ``path`` (a link to nowhere)."""
    try:
        text = userfile.read_text(path)
    except userfile.FileProblem as exc:
        raise UsageError(f"theme {path}: {exc}") from None
    return _parse_text(text, str(path), path.stem)


def shipped_themes() -> list[Theme]:
    root = datafiles.DATA / "themes"
    found: dict[str, Theme] = {}
    for entry in root.iterdir():
        if entry.name.endswith(".toml"):
            theme = _parse_text(entry.read_text(encoding="utf-8"), entry.name, entry.name[:-5])
            found[theme.name] = theme
    ordered = [found.pop(n) for n in SHIPPED_ORDER if n in found]
    return ordered + [found[n] for n in sorted(found)]


def user_themes(folder: Path | None = None) -> tuple[list[Theme], list[str]]:
    """Themes from the user's folder, and one warning per file that could not be used.

    A broken user theme must not stop the dashboard: it is skipped with a warning.
    """
    folder = user_theme_dir() if folder is None else folder
    themes: list[Theme] = []
    warnings: list[str] = []
    try:
        paths = sorted(folder.glob("*.toml"))
    except OSError:
        return themes, warnings
    for path in paths:
        try:
            themes.append(load_theme_file(path))
        except FileNotFoundError:
            warnings.append(f"theme {path}: no such file (a link to nothing?)")
        except UsageError as exc:
            warnings.append(str(exc))
    return themes, warnings


def all_themes(folder: Path | None = None) -> tuple[list[Theme], list[str]]:
    """Shipped themes then user themes (a user theme replaces a shipped one of the same name)."""
    themes = {t.name: t for t in shipped_themes()}
    extra, warnings = user_themes(folder)
    for theme in extra:
        themes[theme.name] = theme
    return list(themes.values()), warnings


def unknown_theme(name: str, available: Iterable[str], folder: Path | None = None) -> UsageError:
    """The error for ``--theme NAME`` that is not among ``available``: where the user's own file
    of that name exists but could not be used, why (a TOML syntax error, a bad colour)."""
    path = (user_theme_dir() if folder is None else folder) / f"{name}.toml"
    try:
        load_theme_file(path)
    except UsageError as exc:
        return exc
    except (OSError, ValueError):  # no such file, or a name no file can have (a NUL in it)
        pass
    return UsageError(f"unknown theme {name!r} (available: {', '.join(available)})")


def check_theme(config: DashboardConfig, names: Iterable[str]) -> None:
    """Refuse the dashboard's theme where it is none of ``names``; where the settings file asked
    for it, the error names that file and its key."""
    names = list(names)
    if config.theme is None or config.theme in names:
        return
    error = unknown_theme(config.theme, names)
    if config.theme_from_settings:
        raise UsageError(f"{config.settings.path}: theme: {error}")
    raise error


def install_themes(app, themes: Iterable[Theme] | None, theme_warnings: Iterable[str],
                   theme: str | None, no_color: bool) -> None:
    """Register ``themes`` (default: shipped + user) on ``app`` and switch to ``theme``.

    Without a theme asked for, NO_COLOR picks the ANSI one; the caller reads NO_COLOR before
    `App.__init__`, which removes it from the environment. Sets ``app.app_themes`` (the cycle
    order) and ``app.theme_warnings`` (shown once mounted).
    """
    if themes is None:
        themes, theme_warnings = all_themes()
    app.app_themes = [t.name for t in themes]
    for t in themes:
        app.register_theme(t)
    wanted = theme or (NO_COLOR_THEME if no_color else DEFAULT_THEME)
    if wanted not in app.app_themes:
        raise unknown_theme(wanted, app.app_themes)
    app.theme = wanted
    app.theme_warnings = list(theme_warnings)
