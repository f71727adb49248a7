"""The rule language: what parses, what each bad rule is told, and how defaults merge."""

from __future__ import annotations

import pytest

from gputop.alerts.defaults import DEFAULT_RULES
from gputop.alerts.model import Condition, Scope
from gputop.alerts.rules import format_duration, parse_condition, parse_duration, parse_rules
from gputop.core.errors import UsageError

WHERE = "~/.config/gputop/config.toml"
DEFAULT_NAMES = [r.name for r in DEFAULT_RULES]


def user_rules(*entries, **table):
    return [r for r in parse_rules({"rule": list(entries), **table}, WHERE) if not r.default]


def error(table) -> str:
    with pytest.raises(UsageError) as info:
        parse_rules(table, WHERE)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(("text", "condition"), [
    ("temperature_c > 85 for 2m", Condition("threshold", "temperature_c", ">", 85.0, 120.0)),
    ("power_draw_w>=300", Condition("threshold", "power_draw_w", ">=", 300.0)),
    ("utilization_gpu_pct < 5 for 1h30m",
     Condition("threshold", "utilization_gpu_pct", "<", 5.0, 5400.0)),
    ("memory_pct != 0", Condition("threshold", "memory_pct", "!=", 0.0)),
    ("hint straggler for 5m", Condition("hint", "straggler", for_s=300.0)),
    ("health xid", Condition("health", "xid")),
    ("health gpu-lost", Condition("health", "gpu-lost")),
    ("health pcie-degraded for 10m", Condition("health", "pcie-degraded", for_s=600.0)),
    ("gpu free for 30s", Condition("gpu", "free", for_s=30.0)),
    ("gpu busy", Condition("gpu", "busy")),
    ("process end", Condition("end", "process")),
    ("job  end", Condition("end", "job")),
])
def test_conditions(text, condition):
    assert parse_condition(text) == condition


def test_a_rule_with_every_key():
    (r,) = user_rules({"name": "hot", "when": "temperature_c > 85 for 2m",
                       "severity": "critical", "gpus": [0, 1], "users": ["alice"],
                       "jobs": [1234, "77"], "cooldown": "10m", "notify": ["ops"]},
                      channel={"ops": {"type": "bell"}})
    assert (r.name, r.text, r.severity, r.cooldown_s, r.notify) == \
        ("hot", "temperature_c > 85 for 2m", "critical", 600.0, ("ops",))
    assert r.scope == Scope(gpus=frozenset({0, 1}), users=frozenset({"alice"}),
                            jobs=frozenset({"1234", "77"}))


def test_durations():
    assert parse_duration("90s", "for") == 90.0
    assert parse_duration("1h30m", "for") == 5400.0
    assert parse_duration(45, "cooldown") == 45.0
    assert [format_duration(s) for s in (0, 45, 120, 125, 5400, 86405)] == \
        ["0s", "45s", "2m", "2m05s", "1h30m", "1d05s"]


# ------------------------------------------------------------------------ defaults


def test_no_table_is_the_defaults():
    assert [r.name for r in parse_rules(None, WHERE)] == DEFAULT_NAMES
    assert all(r.default for r in parse_rules(None, WHERE))


def test_each_default_condition_is_what_its_text_says():
    for r in DEFAULT_RULES:
        assert parse_condition(r.text) == r.condition, r.name


def test_a_user_rule_replaces_the_default_of_its_name():
    rules = parse_rules({"rule": [{"name": "xid", "when": "health xid", "severity": "info"}]},
                        WHERE)
    (xid,) = [r for r in rules if r.name == "xid"]
    assert (xid.severity, xid.default) == ("info", False)
    assert len(rules) == len(DEFAULT_RULES)


def test_defaults_switched_off_one_by_one_or_all():
    one = parse_rules({"rule": [{"name": "thermal-slowdown", "enabled": False}]}, WHERE)
    assert [r.name for r in one] == [n for n in DEFAULT_NAMES if n != "thermal-slowdown"]
    assert parse_rules({"defaults": False}, WHERE) == ()
    mine = parse_rules({"defaults": False, "rule": [{"name": "hot", "when": "gpu busy"}]}, WHERE)
    assert [r.name for r in mine] == ["hot"]


# ------------------------------------------------------------------- bad rules


@pytest.mark.parametrize(("table", "message"), [
    ({"rules": []}, "alerts: unknown key 'rules' (did you mean 'rule'?)"),
    ({"defaults": "no"}, "alerts.defaults: must be true or false"),
    ({"rule": {"name": "x"}}, "alerts.rule: must be a list of rules ([[alerts.rule]])"),
    ({"rule": ["x"]}, "alerts.rule[0]: must be a table ([[alerts.rule]])"),
    ({"rule": [{"when": "gpu busy"}]}, "alerts.rule[0]: name: must be a name of letters"),
    ({"rule": [{"name": "a/b", "when": "gpu busy"}]}, "alert rule 'a/b': name: must be a name"),
    ({"rule": [{"name": "hot"}]}, "alert rule 'hot': when: missing"),
    ({"rule": [{"name": "hot", "when": 85}]}, "alert rule 'hot': when: must be a condition"),
    ({"rule": [{"name": "hot", "when": "temprature_c > 85 for 2m"}]},
     "alert rule 'hot': when 'temprature_c > 85 for 2m': unknown field 'temprature_c' "
     "(did you mean 'temperature_c'?)"),
    ({"rule": [{"name": "hot", "when": "temperature_c = 85"}]},
     "'=' is not an operator; did you mean '=='?"),
    ({"rule": [{"name": "hot", "when": "temperature_c > hot"}]}, "'hot' is not a number"),
    ({"rule": [{"name": "hot", "when": "temperature_c > nan"}]}, "'nan' is not a finite number"),
    ({"rule": [{"name": "hot", "when": "temperature_c > 85 for ever"}]},
     "for: must be a duration like 30s, 2m or 1h (got 'ever')"),
    ({"rule": [{"name": "hot", "when": "temperature_c > 85 for 2m please"}]},
     "'for' takes one duration at the end"),
    ({"rule": [{"name": "s", "when": "hint stragler"}]},
     "unknown hint code 'stragler' (did you mean 'straggler'?)"),
    ({"rule": [{"name": "s", "when": "health ecc"}]}, "unknown health event 'ecc'"),
    ({"rule": [{"name": "s", "when": "health xid for 1m"}]},
     "'health xid' is an event: it has no duration ('for')"),
    ({"rule": [{"name": "s", "when": "gpu idle"}]}, "unknown GPU state 'idle'"),
    ({"rule": [{"name": "s", "when": "process ends"}]}, "say 'process end'"),
    ({"rule": [{"name": "s", "when": "job end for 5m"}]}, "'job end' is an event"),
    ({"rule": [{"name": "s", "when": "helth xid"}]}, "not a condition (did you mean 'health'?)"),
    ({"rule": [{"name": "s", "when": ""}]}, "empty condition"),
    ({"rule": [{"name": "s", "when": "gpu busy", "severity": "warn"}]},
     "severity: must be one of info, warning, critical (got 'warn') (did you mean 'warning'?)"),
    ({"rule": [{"name": "s", "when": "gpu busy", "gpus": "0"}]}, "gpus: must be a list of GPU"),
    ({"rule": [{"name": "s", "when": "gpu busy", "gpus": [True]}]}, "gpus: must be a list"),
    ({"rule": [{"name": "s", "when": "gpu busy", "users": []}]}, "users: must be a list of user"),
    ({"rule": [{"name": "s", "when": "gpu busy", "jobs": [1.5]}]}, "jobs: must be a list of job"),
    ({"rule": [{"name": "s", "when": "gpu busy", "cooldown": "soon"}]},
     "cooldown: must be a duration"),
    ({"rule": [{"name": "s", "when": "gpu busy", "cooldown": "99d"}]},
     "cooldown: must be from 0s to 30d"),
    ({"rule": [{"name": "s", "when": "gpu busy", "notify": ["opz"]}],
      "channel": {"ops": {}}},
     "notify: no channel 'opz' in [alerts.channel] (did you mean 'ops'?)"),
    ({"rule": [{"name": "s", "when": "gpu busy", "enabled": "no"}]}, "enabled: must be true"),
    ({"rule": [{"name": "s", "when": "gpu busy", "severty": "info"}]},
     "unknown key 'severty' (did you mean 'severity'?)"),
    ({"rule": [{"name": "s", "when": "gpu busy"}, {"name": "s", "when": "gpu free"}]},
     "alert rule 's': a second rule of this name"),
    ({"rule": [{"name": "xdi", "enabled": False}]},
     "alert rule 'xdi': enabled = false, but no default rule has this name "
     "(did you mean 'xid'?)"),
])
def test_bad_rules_are_one_line_naming_file_rule_and_problem(table, message):
    said = error(table)
    assert said.startswith(WHERE + ": ")
    assert message in said
