"""`gputop alerts --list`: the alert rules in force, the shipped defaults and the settings
file's, one line each, and where each comes from.

It reads the dashboard's settings file as the dashboard does (``--config FILE``,
``$GPUTOP_CONFIG``, ``--no-config``); a bad rule is one line and exit 2, as at any start.
Opens no device.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from gputop.alerts.model import Rule

HEADER = ("NAME", "WHEN", "SCOPE", "SEVERITY", "COOLDOWN", "NOTIFY", "FROM")


@dataclass(frozen=True)
class AlertsConfig:
    """Which settings file to read: ``--config``'s value, or none at all (``--no-config``)."""

    config: str | None = None
    no_config: bool = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("alerts")
    g.add_argument("--list", action="store_true",
                   help="print the rules in force and where each comes from (the default)")
    # SUPPRESS: `gputop --config F alerts` keeps the value the top level parsed.
    g.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS,
                   help="the settings file (default: $GPUTOP_CONFIG, else"
                        " $XDG_CONFIG_HOME/gputop/config.toml)")
    g.add_argument("--no-config", action="store_true", default=argparse.SUPPRESS,
                   help="ignore the settings file: the shipped rules alone")


def configure(args: argparse.Namespace) -> AlertsConfig:
    return AlertsConfig(config=args.config, no_config=bool(args.no_config))


def run(config: AlertsConfig, out: TextIO | None = None) -> int:
    """Print the rules in force; a bad settings file raises `UsageError` (exit 2)."""
    from gputop.alerts.runtime import from_settings

    alerting = from_settings(config.config, config.no_config)
    rules, where = alerting.rules, alerting.where
    out = out or sys.stdout
    if not rules:
        print(f"no alert rules: {where} switches the defaults off and writes none", file=out)
        return 0
    for line in listing(rules, where):
        print(line, file=out)
    return 0


def listing(rules: tuple[Rule, ...], where: str) -> list[str]:
    """Return the rules as aligned lines under a header; ``where`` names the settings file."""
    from gputop.alerts.rules import describe_scope, format_duration
    from gputop.core.visible import visible

    rows = [HEADER] + [
        (r.name, r.text, describe_scope(r.scope), r.severity, format_duration(r.cooldown_s),
         "all" if r.notify is None else ",".join(r.notify), "default" if r.default else where)
        for r in rules]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER) - 1)]
    return [visible("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1])
            for row in rows]
