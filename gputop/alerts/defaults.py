"""Declare the alert rules gputop ships: the faults nobody wants to miss, in force without a
settings file.

A rule of the same name in ``[[alerts.rule]]`` replaces a default; ``enabled = false`` with
its name switches one off; ``defaults = false`` in ``[alerts]`` switches them all off. The
alerts page of the manual lists them, and a test holds that list to this one (and each
condition to what its text parses to).
"""

from __future__ import annotations

from gputop.alerts.model import Condition, Rule, Severity


def _rule(name: str, text: str, condition: Condition, severity: Severity,
          cooldown_s: float) -> Rule:
    return Rule(name=name, condition=condition, text=text, severity=severity,
                cooldown_s=cooldown_s, default=True)


DEFAULT_RULES: tuple[Rule, ...] = (
    _rule("xid", "health xid", Condition("health", "xid"), "critical", 600.0),
    _rule("gpu-lost", "health gpu-lost", Condition("health", "gpu-lost"), "critical", 600.0),
    _rule("ecc-uncorrected", "health ecc-uncorrected", Condition("health", "ecc-uncorrected"),
          "critical", 3600.0),
    _rule("row-remap-failed", "health row-remap-failed",
          Condition("health", "row-remap-failed"), "critical", 3600.0),
    _rule("thermal-slowdown", "hint thermal-throttled for 1m",
          Condition("hint", "thermal-throttled", for_s=60.0), "warning", 1800.0),
)
