"""`gputop alerts --list`, and bad rules stopping every command that reads them at start."""

from __future__ import annotations

import pytest

from gputop.alerts.defaults import DEFAULT_RULES
from gputop.commands.main import build_parser, main
from gputop.core.errors import UsageError
from tests.support.settings_file import config_home_fixture, write_settings  # noqa: F401

RULES = """
[alerts]
[[alerts.rule]]
name = "hot"
when = "temperature_c > 85 for 2m"
gpus = [0, 1]
users = ["alice"]
cooldown = "10m"
notify = ["ops"]
[[alerts.rule]]
name = "thermal-slowdown"
enabled = false
[alerts.channel.ops]
type = "webhook"
url = "https://hooks.example.com/services/T0/B0/XXXX"
"""


def listed(capsys, *argv: str) -> list[list[str]]:
    assert main(list(argv)) == 0
    return [line.split() for line in capsys.readouterr().out.splitlines()]


def test_the_defaults_alone_without_a_file(config_home, capsys):
    rows = listed(capsys, "alerts", "--list")
    assert rows[0] == ["NAME", "WHEN", "SCOPE", "SEVERITY", "COOLDOWN", "NOTIFY", "FROM"]
    assert [r[0] for r in rows[1:]] == [r.name for r in DEFAULT_RULES]
    assert all(r[-1] == "default" for r in rows[1:])
    assert rows[1] == ["xid", "health", "xid", "all", "critical", "10m", "all", "default"]


def test_the_files_rules_with_where_each_comes_from(config_home, capsys):
    path = write_settings(config_home, RULES)
    rows = listed(capsys, "alerts")
    names = [r[0] for r in rows[1:]]
    assert "thermal-slowdown" not in names and names[-1] == "hot"
    assert rows[-1] == ["hot", "temperature_c", ">", "85", "for", "2m", "gpus", "0,1", "users",
                        "alice", "warning", "10m", "ops", str(path)]


def test_config_and_no_config_as_the_dashboard_takes_them(config_home, tmp_path, capsys):
    write_settings(config_home, RULES)
    other = tmp_path / "other.toml"
    other.write_text("[alerts]\ndefaults = false\n[[alerts.rule]]\nname = \"free\"\n"
                     "when = \"gpu free for 5m\"\n")
    for argv in (["alerts", "--config", str(other)], ["--config", str(other), "alerts"]):
        assert [r[0] for r in listed(capsys, *argv)[1:]] == ["free"]
    assert [r[0] for r in listed(capsys, "alerts", "--no-config")[1:]] == \
        [r.name for r in DEFAULT_RULES]


def test_no_rules_at_all_says_so(config_home, capsys):
    write_settings(config_home, "[alerts]\ndefaults = false\n")
    assert main(["alerts"]) == 0
    assert "no alert rules" in capsys.readouterr().out


def test_a_bad_rule_is_one_line_and_exit_2(config_home, capsys):
    path = write_settings(config_home, RULES.replace("temperature_c", "temprature_c"))
    assert main(["alerts", "--list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"gputop: {path}: alert rule 'hot': when 'temprature_c > 85 for 2m': "
                          "unknown field 'temprature_c' (did you mean 'temperature_c'?)")


def test_a_bad_rule_stops_the_dashboard_before_any_device(config_home, monkeypatch):
    from gputop.commands import dashboard

    write_settings(config_home, RULES.replace('"ops"]', '"opz"]'))
    monkeypatch.setattr(dashboard, "_open", lambda source: pytest.fail("opened a device"))
    parser = build_parser()
    with pytest.raises(UsageError, match="notify: no channel 'opz'"):
        dashboard.configure(parser, [], parser.parse_args([]))


@pytest.mark.parametrize("channel, said", [
    ('type = "webhook"', "alerts.channel.ops: a webhook needs a url"),
    ('type = "mail"\nto = "ops@example.com"\nsendmail = "/nonexistent/sendmail"',
     "alerts.channel.ops: no sendmail /nonexistent/sendmail: "),
])
def test_a_bad_channel_stops_the_dashboard_in_one_line_before_any_device(
        config_home, monkeypatch, capsys, channel, said):
    from gputop.commands import dashboard

    text = RULES.split("[alerts.channel.ops]")[0] + f"[alerts.channel.ops]\n{channel}\n"
    path = write_settings(config_home, text)
    monkeypatch.setattr(dashboard, "_open", lambda source: pytest.fail("opened a device"))
    assert main(["--backend", "sim"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"gputop: {path}: {said}"), err


def test_the_dashboard_takes_a_file_with_rules(config_home):
    from gputop.commands import dashboard

    write_settings(config_home, RULES)
    parser = build_parser()
    config = dashboard.configure(parser, [], parser.parse_args([]))
    assert config.settings.alerts is not None and "rule" in config.settings.alerts


def test_a_bad_channel_is_one_line_and_exit_2(config_home, capsys):
    write_settings(config_home, '[alerts]\n[alerts.channel.ops]\ntype = "webhook"\n')
    assert main(["alerts", "--list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "alerts.channel.ops: a webhook needs a url" in err
