"""The alerts page says what the code does: its defaults, its example file and its listing."""

from __future__ import annotations

import re

from gputop.alerts.defaults import DEFAULT_RULES
from gputop.alerts.rules import format_duration, parse_rules
from gputop.commands.alerts import listing
from gputop.core import userfile
from tests.support.paths import ROOT

PAGE = ROOT / "docs" / "alerts.md"
WHERE = "~/.config/gputop/config.toml"


def section(title: str) -> str:
    return PAGE.read_text(encoding="utf-8").split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_the_defaults_table_is_the_shipped_defaults():
    rows = [[cell.strip().strip("`") for cell in line.strip("|").split("|")]
            for line in section("The defaults").splitlines() if line.startswith("| `")]
    assert [row[:4] for row in rows] == [
        [r.name, r.text, r.severity, format_duration(r.cooldown_s)] for r in DEFAULT_RULES]


def test_the_example_file_is_valid_and_its_listing_is_what_gputop_prints():
    example = blocks(section("Rules"), "toml")[0]
    rules = parse_rules(userfile.load_toml(example)["alerts"], WHERE)
    shown = blocks(PAGE.read_text(encoding="utf-8"), "")[0].splitlines()
    assert shown[0] == "$ gputop alerts --list"
    assert shown[1:] == listing(rules, WHERE)


def test_the_switches_example_is_valid():
    example = blocks(section("The defaults"), "toml")[0]
    assert parse_rules(userfile.load_toml(example)["alerts"], WHERE) == ()
