"""The dashboard's settings file: ``$XDG_CONFIG_HOME/gputop/config.toml`` (default
``~/.config/gputop/config.toml``), defaults that command-line options override.

Only the dashboard reads it (``gputop`` and ``gputop replay``), and ``gputop alerts``,
``gputop watch`` and the cluster view its ``[alerts]`` table: query mode, ``snapshot``, ``agent``, ``exporter``, ``advise`` and ``cluster``
feed scripts and other programs, whose output must not change with one user's dashboard
preferences. ``--config PATH`` or ``$GPUTOP_CONFIG``
names another file; ``--no-config`` or an empty ``$GPUTOP_CONFIG`` ignores it. The command line
is laid over it, and both handed to the dashboard as one config, by `gputop.commands.dashboard`.

Every value is checked as the file is read, before any device is opened: a bad one is one line
naming the file and the key, and exit 2. Numbers pass `gputop.core.bounds`, as on the command line.
Textual-free: the theme's name is checked where the themes are loaded (`gputop.tui.app`), and
the ``[alerts]`` table by `gputop.alerts.rules` (a layer above this one), before any device too.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gputop.config.columns import PROCESS_COLUMNS
from gputop.core import bounds
from gputop.core.errors import UsageError

CONFIG_ENV = "GPUTOP_CONFIG"

SORT_ORDERS = ("ascending", "descending")

KEYS = ("theme", "interval", "readonly", "sort", "sort_order", "columns", "record_fields",
        "alerts")


@dataclass(frozen=True)
class Settings:
    """What the file sets; None where it says nothing (the built-in default applies)."""

    path: str | None = None  # the file read; None: no file
    theme: str | None = None
    interval: float | None = None
    readonly: bool | None = None
    sort: str | None = None
    sort_descending: bool | None = None  # None: the column's own first direction
    columns: tuple[str, ...] | None = None
    record_fields: str | None = None  # comma separated, as --record-fields takes them
    # The [alerts] table as written: `gputop.alerts.rules.parse_rules` checks it.
    alerts: Mapping[str, object] | None = None


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/gputop``, default ``~/.config/gputop``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "gputop"


def settings_path(option: str | None, no_config: bool,
                  environ: Mapping[str, str] | None = None) -> tuple[Path | None, bool]:
    """The file to read and whether it was named (a named file must exist; the default may
    not). ``option`` is ``--config``'s value; None for no file at all."""
    env = os.environ if environ is None else environ
    if no_config:
        return None, False
    if option is not None:
        return Path(option), True
    if CONFIG_ENV in env:
        return (Path(env[CONFIG_ENV]), True) if env[CONFIG_ENV] else (None, False)
    return config_dir(env) / "config.toml", False


def shown(path: Path) -> str:
    """The path as the user would write it: under the home folder as ``~/…``."""
    home = os.path.expanduser("~")
    text = str(path)
    if home not in ("", "/") and text.startswith(home + os.sep):
        return "~" + text[len(home):]
    return text


def load(path: Path | None, named: bool = True) -> Settings:
    """The settings in ``path``; empty Settings when there is none (and it was not named)."""
    from gputop.core import userfile

    if path is None:
        return Settings()
    where = shown(path)
    try:
        doc = userfile.load_toml(userfile.read_text(path))
    except FileNotFoundError:
        if not named:
            return Settings()
        raise UsageError(f"{where}: no such file") from None
    except userfile.FileProblem as exc:
        raise UsageError(f"{where}: {exc}") from None
    return parse(doc, where)


def parse(doc: Mapping[str, object], where: str) -> Settings:
    """Check a parsed settings document; ``where`` names it in errors."""
    def bad(key: str, why: str) -> UsageError:
        return UsageError(f"{where}: {key}: {why}")

    unknown = [k for k in doc if k not in KEYS]
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    found: dict[str, object] = {"path": where}

    if "theme" in doc:
        theme = doc["theme"]
        if not isinstance(theme, str) or not theme.strip():
            raise bad("theme", f"must be a theme's name (got {written(theme)})")
        found["theme"] = theme
    if "interval" in doc:
        found["interval"] = _number("interval", doc["interval"], bounds.INTERVAL, bad)
    if "readonly" in doc:
        if not isinstance(doc["readonly"], bool):
            raise bad("readonly", f"must be true or false (got {written(doc['readonly'])})")
        found["readonly"] = doc["readonly"]
    columns = None
    if "columns" in doc:
        columns = _names("columns", doc["columns"], PROCESS_COLUMNS, bad)
        if not columns:
            raise bad("columns", "must name at least one column")
        found["columns"] = tuple(c for c in PROCESS_COLUMNS if c in columns)
    if "sort" in doc:
        sort = _name("sort", doc["sort"], PROCESS_COLUMNS, bad)
        if columns is not None and sort not in columns:
            raise bad("sort", f"{sort!r} is not one of the columns shown ({', '.join(columns)})")
        found["sort"] = sort
    if "sort_order" in doc:
        found["sort_descending"] = _name("sort_order", doc["sort_order"], SORT_ORDERS,
                                         bad) == "descending"
    if "record_fields" in doc:
        fields = _strings("record_fields", doc["record_fields"], bad)
        if not fields:
            raise bad("record_fields", "must name at least one field")
        from gputop.formats.query_fields import InvalidField, lookup

        for field in fields:
            try:
                lookup(field)  # one name each: "index,power.draw" is two, written as two
            except InvalidField:
                raise bad("record_fields", f"unknown field {field!r} (see gputop "
                                           "--help-query-gpu)") from None
        found["record_fields"] = ",".join(fields)
    if "alerts" in doc:
        if not isinstance(doc["alerts"], dict):
            raise bad("alerts", f"must be a table ([alerts]) (got {written(doc['alerts'])})")
        found["alerts"] = doc["alerts"]
    return Settings(**found)  # type: ignore[arg-type]


def _number(key: str, value: object, bound: bounds.Bound, bad) -> float:
    wanted = f"must be {bound.kind()} from {bound.describe()} (got {written(value)})"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad(key, wanted)
    if bound.problem(repr(value)) is not None:
        raise bad(key, wanted)
    return float(value)


def _strings(key: str, value: object, bad) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad(key, f"must be a list of names in quotes (got {written(value)})")
    return value


def _name(key: str, value: object, known: tuple[str, ...], bad) -> str:
    if not isinstance(value, str) or value not in known:
        raise bad(key, f"must be one of {', '.join(known)} (got {written(value)})")
    return value


def _names(key: str, value: object, known: tuple[str, ...], bad) -> list[str]:
    names = _strings(key, value, bad)
    for name in names:
        if name not in known:
            raise bad(key, f"unknown column {name!r} (known: {', '.join(known)})")
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise bad(key, f"{twice!r} is named twice")
    return names


def written(value: object, limit: int = 40) -> str:
    """A value as the TOML file wrote it (``"fast"``, ``inf``, ``[1, 2]``, a table), cut short."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and not math.isfinite(value):
        text = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    elif isinstance(value, dict):
        text = "a table"
    elif isinstance(value, list):
        text = "[" + ", ".join(written(v, limit) for v in value) + "]"
    elif isinstance(value, (int, float, str)):
        text = bounds.as_written(value, limit)
    else:  # dates and times
        text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"
