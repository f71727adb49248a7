"""The dashboard's settings file (gputop.config.settings): found, checked, and overridden by options."""

from __future__ import annotations

import os
import re

import pytest

from gputop.commands.dashboard import configure
from gputop.commands.main import build_parser, prepare_command
from gputop.config.columns import PROCESS_COLUMNS
from gputop.config.settings import Settings, load
from gputop.core.errors import UsageError
from tests.support.paths import ROOT
from tests.support.settings_file import config_home_fixture, write_settings  # noqa: F401


def dashboard_args(*argv: str):
    """What `gputop ARGV` hands the dashboard: its config, settings applied."""
    parser = build_parser()
    args = parser.parse_args(list(argv))
    return configure(parser, list(argv), args)


def readme_example() -> str:
    page = (ROOT / "docs" / "dashboard.md").read_text(encoding="utf-8")
    section = page.split("**Settings file.**", 1)[1]
    return re.search(r"```toml\n(.*?)```", section, re.S).group(1)


# ------------------------------------------------------------------ the file and its values


def test_the_readme_example_is_a_valid_file_and_sets_every_key(config_home):
    settings = load(write_settings(config_home, readme_example()))
    assert settings.theme == "light" and settings.interval == 2.0 and settings.readonly is True
    assert settings.sort == "gpu_mem" and settings.sort_descending is True
    assert settings.columns == ("gpu", "pid", "user", "job", "gpu_mem", "sm", "cpu", "time",
                                "command")
    assert settings.record_fields.split(",")[:2] == ["timestamp", "index"]


def test_columns_are_those_of_the_process_table():
    from gputop.tui.widgets.processes import COLUMNS

    assert PROCESS_COLUMNS == tuple(c.key for c in COLUMNS)


def test_columns_are_drawn_in_the_tables_order_whatever_the_files_order(config_home):
    settings = load(write_settings(config_home, 'columns = ["command", "pid"]\n'))
    assert settings.columns == ("pid", "command")


@pytest.mark.parametrize(("text", "message"), [
    ('interval = "fast"\n',
     'interval: must be a number from 0.05 to 86400 s (got "fast")'),
    ("interval = 1e-9\n", "interval: must be a number from 0.05 to 86400 s (got 1e-09)"),
    ("interval = inf\n", "interval: must be a number from 0.05 to 86400 s (got inf)"),
    ("interval = nan\n", "interval: must be a number from 0.05 to 86400 s (got nan)"),
    ("interval = true\n", "interval: must be a number from 0.05 to 86400 s (got true)"),
    ("interval = 86401\n", "interval: must be a number from 0.05 to 86400 s (got 86401)"),
    ('readonly = "yes"\n', 'readonly: must be true or false (got "yes")'),
    ("theme = 3\n", "theme: must be a theme's name (got 3)"),
    ('colour = "light"\n', "unknown key 'colour' (known: theme, interval, readonly, sort"),
    ('[theme]\nname = "x"\n', "theme: must be a theme's name (got a table)"),
    ('sort = "memory"\n', 'sort: must be one of gpu, pid, user, job, gpu_mem, sm, cpu, '
                          'host_mem, time, idle, command (got "memory")'),
    ('sort_order = "down"\n', 'sort_order: must be one of ascending, descending (got "down")'),
    ('columns = ["pid", "ram"]\n', "columns: unknown column 'ram' (known: gpu, pid"),
    ('columns = "pid"\n', 'columns: must be a list of names in quotes (got "pid")'),
    ("columns = []\n", "columns: must name at least one column"),
    ('columns = ["pid", "pid"]\n', "columns: 'pid' is named twice"),
    ('columns = ["pid", "command"]\nsort = "time"\n',
     "sort: 'time' is not one of the columns shown (pid, command)"),
    ('record_fields = ["index", "power.drawn"]\n',
     "record_fields: unknown field 'power.drawn' (see gputop --help-query-gpu)"),
    ('record_fields = "index,power.draw"\n', "record_fields: must be a list of names in quotes"),
    ('record_fields = ["index,power.draw"]\n',
     "record_fields: unknown field 'index,power.draw'"),
    ("alerts = 3\n", "alerts: must be a table ([alerts]) (got 3)"),
    ('theme = "light"\ninterval = \n', "not valid TOML: Invalid value (at line 2, column 12)"),
    ('theme = "light\n', "not valid TOML: "),
])
def test_a_bad_value_is_one_error_naming_the_file_and_the_key(config_home, text, message):
    path = write_settings(config_home, text)
    with pytest.raises(UsageError) as caught:
        load(path)
    assert str(caught.value).startswith(f"{path}: {message}"), str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_file_under_home_is_named_as_the_user_writes_it(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    path = write_settings(tmp_path / ".config", "interval = 0\n")
    with pytest.raises(UsageError, match=r"^~/\.config/gputop/config\.toml: interval: "):
        load(path)


def test_a_fifo_or_a_huge_file_is_refused_at_once(config_home):
    fifo = config_home / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        load(fifo)  # would wait for a writer forever if it were opened
    big = config_home / "big.toml"
    big.write_text("# " + "x" * (1 << 20) + "\n")
    with pytest.raises(UsageError, match="larger than 1 MiB"):
        load(big)


# ------------------------------------------------------------------ which file, and who wins


def test_no_file_at_the_default_place_is_no_settings(config_home):
    args = dashboard_args()
    assert args.settings == Settings() and args.source.interval == 1.0 and args.theme is None


def test_the_file_gives_the_defaults_and_options_win(config_home):
    write_settings(config_home, 'theme = "light"\ninterval = 2\nreadonly = true\n'
                       'record_fields = ["index", "power.draw"]\n')
    args = dashboard_args()
    assert (args.theme, args.source.interval, args.readonly) == ("light", 2.0, True)
    assert args.record_fields == "index,power.draw" and args.theme_from_settings
    args = dashboard_args("--theme", "dark", "--interval", "0.5", "--no-readonly",
                          "--record-fields", "index")
    assert (args.theme, args.source.interval, args.readonly) == ("dark", 0.5, False)
    assert args.record_fields == "index" and not args.theme_from_settings
    args = dashboard_args("replay", "--interval", "3", "log.csv")  # the dashboard on a log
    assert (args.theme, args.source.interval) == ("light", 3.0)


def test_gputop_config_and_the_config_option_pick_another_file(config_home, monkeypatch, tmp_path):
    write_settings(config_home, "interval = 2\n")
    other = tmp_path / "other.toml"
    other.write_text("interval = 5\n")
    monkeypatch.setenv("GPUTOP_CONFIG", str(other))
    assert dashboard_args().source.interval == 5.0
    third = tmp_path / "third.toml"
    third.write_text("interval = 7\n")
    assert dashboard_args("--config", str(third)).source.interval == 7.0
    assert dashboard_args("--no-config").source.interval == 1.0
    monkeypatch.setenv("GPUTOP_CONFIG", "")  # empty: no file at all
    assert dashboard_args().source.interval == 1.0


def test_a_file_named_but_missing_is_an_error(config_home, tmp_path, monkeypatch):
    with pytest.raises(UsageError, match=r"missing\.toml: no such file$"):
        dashboard_args("--config", str(tmp_path / "missing.toml"))
    monkeypatch.setenv("GPUTOP_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(UsageError, match="no such file"):
        dashboard_args()


def test_commands_for_scripts_never_read_it(config_home, monkeypatch):
    from gputop.commands import advise, agent, cluster, exporter, snapshot
    from gputop.commands.cluster import ClusterConfig

    write_settings(config_home, 'interval = "fast"\n')  # would stop the dashboard
    seen = []
    for module in (advise, agent, cluster, exporter, snapshot):
        monkeypatch.setattr(module, "run", lambda config: seen.append(config) or 0)

    def command_config(*argv: str):
        parser = build_parser()
        assert prepare_command(parser, list(argv), parser.parse_args(list(argv)))() == 0
        return seen.pop()

    for argv in (["snapshot"], ["agent"], ["advise"], ["exporter"], ["cluster", "h"]):
        config = command_config(*argv)
        interval = config.interval if isinstance(config, ClusterConfig) else config.source.interval
        assert not hasattr(config, "settings") and interval == 1.0
    with pytest.raises(UsageError, match="only the dashboard reads a settings file"):
        command_config("--config", "x.toml", "snapshot")


# ------------------------------------------------------------------ as a user meets it


