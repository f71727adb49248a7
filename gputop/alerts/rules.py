"""Read the alert rules a person writes in the settings file's ``[alerts]`` table.

Pure: the TOML is already parsed (`gputop.config.settings` reads the file); this checks it and
returns `Rule` values, the shipped defaults (`gputop.alerts.defaults`) merged in. A bad rule is a
`UsageError` of one line naming the file, the rule and what is wrong, raised at start, before
any device is opened.

The condition language (``when``), one condition per rule::

    FIELD OP NUMBER [for DURATION]     a numeric Device field: temperature_c > 85 for 2m
    hint CODE [for DURATION]           a hint gputop raises: hint straggler for 5m
    health EVENT [for DURATION]        ecc-uncorrected, rows-remapped, row-remap-failed,
                                       link-degraded (or pcie-degraded), gpu-lost
    health xid                         an Xid error (an event: no duration)
    gpu free|busy [for DURATION]       a GPU with no process / with one
    process end | job end              a process leaving a GPU, a job's last process leaving

OP is one of > >= < <= == !=; DURATION is a number with s, m, h or d (``90s``, ``2m``,
``1h30m``).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import cast

from gputop.alerts.defaults import DEFAULT_RULES
from gputop.alerts.model import SEVERITIES, Condition, Rule, Scope, Severity
from gputop.core.errors import UsageError
from gputop.core.model import HINT_CODES, Device

OPS = (">=", "<=", "==", "!=", ">", "<")

# Device's numbers a threshold may watch: its int and float fields, and the shares it derives.
_DERIVED = ("memory_pct", "power_pct", "clock_sm_pct", "process_sm_pct")
FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(Device)
    if str(f.type).replace(" ", "") in ("int", "float", "int|None", "float|None")
    and f.name != "index"
) + _DERIVED

# Health events a rule may name; the state ones map onto the health hints of
# `gputop.analysis.hints.device_health`, so "degraded" means the same thing on the screen.
STATE_HEALTH = {
    "ecc-uncorrected": ("ecc-uncorrected",),
    "rows-remapped": ("row-remap-pending", "pages-pending"),
    "row-remap-failed": ("row-remap-failed",),
    "link-degraded": ("pcie-degraded",),
    "pcie-degraded": ("pcie-degraded",),
    "gpu-lost": (),  # the device's status, not a hint
}
EVENT_HEALTH = ("xid",)
HEALTH_EVENTS: tuple[str, ...] = (*STATE_HEALTH, *EVENT_HEALTH)
GPU_STATES = ("free", "busy")
ENDINGS = ("process", "job")

# What the [alerts] table holds: its rules, the channels (read by `gputop.alerts.notify`), the
# journal's path (`gputop.alerts.journal`) and whether the shipped defaults apply.
TABLE_KEYS = ("rule", "channel", "journal", "defaults")
RULE_KEYS = ("name", "when", "severity", "gpus", "users", "jobs", "cooldown", "notify",
             "enabled")

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)([smhd]))")
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
MAX_DURATION_S = 30 * 86400.0


class RuleError(ValueError):
    """What is wrong with one rule, in words that follow its name."""


def parse_rules(table: Mapping[str, object] | None, where: str,
                defaults: Sequence[Rule] | None = None) -> tuple[Rule, ...]:
    """Return the rules in force: the shipped defaults (unless ``defaults = false``) with the
    settings file's ``[alerts]`` ``table`` over them (a rule of a default's name replaces it;
    ``enabled = false`` switches it off). ``where`` names the file in errors; ``table`` None:
    no ``[alerts]`` table, the defaults alone. Raises `UsageError` on the first bad rule."""
    if defaults is None:
        defaults = DEFAULT_RULES
    table = {} if table is None else table
    if not isinstance(table, Mapping):
        raise UsageError(f"{where}: alerts: must be a table ([alerts])")
    for key in table:
        if key not in TABLE_KEYS:
            raise UsageError(f"{where}: alerts: unknown key {key!r}{_did_you_mean(key, TABLE_KEYS)}"
                             f" (known: {', '.join(TABLE_KEYS)})")
    use_defaults = table.get("defaults", True)
    if not isinstance(use_defaults, bool):
        raise UsageError(f"{where}: alerts.defaults: must be true or false")
    channels = table.get("channel", {})
    if not isinstance(channels, Mapping):
        raise UsageError(f"{where}: alerts.channel: must be a table of channels "
                         "([alerts.channel.NAME])")
    entries = table.get("rule", [])
    if not isinstance(entries, list):
        raise UsageError(f"{where}: alerts.rule: must be a list of rules ([[alerts.rule]])")

    by_name = {r.name: r for r in defaults} if use_defaults else {}
    written: set[str] = set()
    for n, entry in enumerate(entries):
        label = f"alerts.rule[{n}]"
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            label = f"alert rule {entry['name']!r}"
        try:
            rule = parse_rule(entry, tuple(channels))
        except RuleError as exc:
            raise UsageError(f"{where}: {label}: {exc}") from None
        name = cast(str, cast(Mapping[str, object], entry)["name"])
        if name in written:
            raise UsageError(f"{where}: {label}: a second rule of this name")
        written.add(name)
        if rule is None:
            if name not in by_name and use_defaults:
                raise UsageError(f"{where}: {label}: enabled = false, but no default rule has "
                                 f"this name{_did_you_mean(name, tuple(by_name))}")
            by_name.pop(name, None)
        else:
            by_name[name] = rule
    return tuple(by_name.values())


def parse_rule(entry: object, channels: Sequence[str] = ()) -> Rule | None:
    """Check one ``[[alerts.rule]]`` entry; None where it says ``enabled = false`` (a default
    switched off). ``channels`` are the channel names ``notify`` may use. Raises `RuleError`."""
    if not isinstance(entry, Mapping):
        raise RuleError("must be a table ([[alerts.rule]])")
    for key in entry:
        if key not in RULE_KEYS:
            raise RuleError(f"unknown key {key!r}{_did_you_mean(key, RULE_KEYS)} "
                            f"(known: {', '.join(RULE_KEYS)})")
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise RuleError("name: must be a name of letters, digits, '-', '_' or '.' "
                        "(at most 64, in quotes)")
    enabled = entry.get("enabled", True)
    if not isinstance(enabled, bool):
        raise RuleError("enabled: must be true or false")
    if "when" not in entry:
        if not enabled:
            return None
        raise RuleError("when: missing (the condition, e.g. \"temperature_c > 85 for 2m\")")
    when = entry["when"]
    if not isinstance(when, str):
        raise RuleError("when: must be a condition in quotes")
    try:
        condition = parse_condition(when)
    except RuleError as exc:
        raise RuleError(f"when {' '.join(when.split())!r}: {exc}") from None
    severity = entry.get("severity", "warning")
    if severity not in SEVERITIES:
        raise RuleError(f"severity: must be one of {', '.join(SEVERITIES)} "
                        f"(got {severity!r}){_did_you_mean(str(severity), SEVERITIES)}")
    cooldown = parse_duration(entry["cooldown"], "cooldown") if "cooldown" in entry else 300.0
    notify = None
    if "notify" in entry:
        notify = tuple(_strings(entry["notify"], "notify", "channel names"))
        for channel in notify:
            if channel not in channels:
                raise RuleError(f"notify: no channel {channel!r} in [alerts.channel]"
                                f"{_did_you_mean(channel, tuple(channels))}")
    if not enabled:
        return None
    return Rule(name=name, condition=condition, text=" ".join(when.split()),
                severity=cast(Severity, severity), scope=_scope(entry), cooldown_s=cooldown,
                notify=notify)


def parse_condition(text: str) -> Condition:
    """Parse a rule's ``when`` (the language in this module's docstring); raises `RuleError`."""
    words = text.split()
    for_s = 0.0
    if "for" in words:
        at = words.index("for")
        if len(words) != at + 2:
            raise RuleError("'for' takes one duration at the end (e.g. 'for 2m')")
        for_s = parse_duration(words[at + 1], "for")
        words = words[:at]
    if not words:
        raise RuleError("empty condition")
    head = words[0]
    if head == "hint":
        code = _one(words, "hint", HINT_CODES, "hint code")
        return Condition("hint", code, for_s=for_s)
    if head == "health":
        event = _one(words, "health", HEALTH_EVENTS, "health event")
        if event in EVENT_HEALTH and for_s:
            raise RuleError(f"'health {event}' is an event: it has no duration ('for')")
        return Condition("health", event, for_s=for_s)
    if head == "gpu":
        state = _one(words, "gpu", GPU_STATES, "GPU state")
        return Condition("gpu", state, for_s=for_s)
    if head in ENDINGS:
        if words[1:] != ["end"]:
            raise RuleError(f"say '{head} end'")
        if for_s:
            raise RuleError(f"'{head} end' is an event: it has no duration ('for')")
        return Condition("end", head)
    return _threshold(words, for_s)


def _threshold(words: list[str], for_s: float) -> Condition:
    text = " ".join(words)
    match = re.fullmatch(r"([A-Za-z_][\w.]*)\s*(>=|<=|==|!=|>|<|=)\s*(\S+)", text)
    if match is None:
        kinds = "FIELD OP NUMBER, hint CODE, health EVENT, gpu free|busy, process end or job end"
        first = words[0]
        hint = _did_you_mean(first, ("hint", "health", "gpu", "process", "job", *FIELDS))
        raise RuleError(f"not a condition{hint} (expected {kinds})")
    field, op, number = match.groups()
    if field not in FIELDS:
        raise RuleError(f"unknown field {field!r}{_did_you_mean(field, FIELDS)} (a numeric "
                        "field of gputop snapshot --json's devices)")
    if op == "=":
        raise RuleError("'=' is not an operator; did you mean '=='?")
    try:
        value = float(number)
    except ValueError:
        raise RuleError(f"{number!r} is not a number") from None
    if not math.isfinite(value):
        raise RuleError(f"{number!r} is not a finite number")
    return Condition("threshold", field, op=op, value=value, for_s=for_s)


def _one(words: list[str], head: str, known: Sequence[str], what: str) -> str:
    if len(words) != 2:
        raise RuleError(f"say '{head} NAME': one {what} (one of {', '.join(known)})")
    if words[1] not in known:
        raise RuleError(f"unknown {what} {words[1]!r}{_did_you_mean(words[1], known)} "
                        f"(known: {', '.join(known)})")
    return words[1]


def parse_duration(value: object, key: str) -> float:
    """Read a duration: ``"90s"``, ``"2m"``, ``"1h30m"``, or a number of seconds; raises
    `RuleError` naming ``key``."""
    wanted = f"{key}: must be a duration like 30s, 2m or 1h"
    if isinstance(value, bool):
        raise RuleError(f"{wanted} (got {value!r})")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and re.fullmatch(r"(?:\d+(?:\.\d+)?[smhd])+", value.strip()):
        seconds = sum(float(n) * _UNIT_S[u] for n, u in _DURATION.findall(value.strip()))
    else:
        raise RuleError(f"{wanted} (got {value!r})")
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_DURATION_S):
        raise RuleError(f"{key}: must be from 0s to {format_duration(MAX_DURATION_S)}")
    return seconds


def format_duration(seconds: float) -> str:
    """Write seconds as a rule would: ``2m``, ``1h30m``, ``45s``, ``2m05s``."""
    s = int(round(seconds))
    if s == 0:
        return "0s"
    out: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        n, s = divmod(s, size)
        if n:
            out.append(f"{n:02d}{unit}" if out else f"{n}{unit}")
    return "".join(out)


def _scope(entry: Mapping[str, object]) -> Scope:
    gpus = users = jobs = None
    if "gpus" in entry:
        raw = entry["gpus"]
        if not isinstance(raw, list) or not raw or not all(
                isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in raw):
            raise RuleError("gpus: must be a list of GPU indices (e.g. [0, 1])")
        gpus = frozenset(cast("list[int]", raw))
    if "users" in entry:
        users = frozenset(_strings(entry["users"], "users", "user names"))
    if "jobs" in entry:
        raw = entry["jobs"]
        if not isinstance(raw, list) or not raw or not all(
                isinstance(j, (str, int)) and not isinstance(j, bool) and str(j).strip()
                for j in raw):
            raise RuleError("jobs: must be a list of job ids (e.g. [\"1234\"])")
        jobs = frozenset(str(j).strip() for j in raw)
    return Scope(gpus=gpus, users=users, jobs=jobs)


def _strings(value: object, key: str, what: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(
            isinstance(v, str) and v.strip() for v in value):
        raise RuleError(f"{key}: must be a list of {what} in quotes")
    return [v.strip() for v in value]


def _did_you_mean(word: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def describe_scope(scope: Scope) -> str:
    """Write a scope for a listing: ``gpus 0,1 users alice``; ``all`` where it has none."""
    parts = []
    if scope.gpus is not None:
        parts.append("gpus " + ",".join(str(g) for g in sorted(scope.gpus)))
    if scope.users is not None:
        parts.append("users " + ",".join(sorted(scope.users)))
    if scope.jobs is not None:
        parts.append("jobs " + ",".join(sorted(scope.jobs)))
    return " ".join(parts) or "all"
