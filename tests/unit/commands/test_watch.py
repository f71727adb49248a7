"""`gputop watch` before and around its sampling: what it refuses before any device opens,
and how it writes its lines (to a file, to stderr, to systemd's journal)."""

from __future__ import annotations

import io
import os
import re

import pytest

import gputop.backends as backends
from gputop.alerts.model import Alert
from gputop.commands import watch
from gputop.commands.main import main
from tests.support.paths import ROOT
from tests.support.settings_file import config_home_fixture, write_settings  # noqa: F401


@pytest.fixture
def no_device_opens(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a device was opened")

    monkeypatch.setattr(backends, "open_backend", refuse)


@pytest.mark.parametrize("text, said", [
    ('[[alerts.rule]]\nname = "hot"\nwhen = "temperature_c >> 85"\n', "alert rule 'hot'"),
    ('[alerts.channel.ops]\ntype = "webhook"\n', "alerts.channel.ops"),
    ('[alerts.channel.ops]\ntype = "command"\ncommand = "/nonexistent/notify-ops"\n',
     "alerts.channel.ops"),
])
def test_a_bad_rule_or_channel_is_one_line_and_exit_2_before_any_device(
        config_home, no_device_opens, capsys, text, said):
    write_settings(config_home, "[alerts]\n" + text)
    assert main(["watch", "--backend", "sim"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and said in err[0], err


def test_a_log_file_that_cannot_be_opened_is_exit_2_before_any_device(
        tmp_path, no_device_opens, capsys):
    assert main(["watch", "--no-config", "--log", str(tmp_path / "no" / "such" / "log")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("gputop: --log: cannot open "), err


def alert(state: str = "firing", severity: str = "critical") -> Alert:
    return Alert(rule="xid", key="xid/n1/gpu1/xid79", state=state, severity=severity,  # type: ignore[arg-type]
                 at=0.0, summary="GPU 1 Xid 79\n(GPU has fallen off the bus)", node="n1", gpu=1)


def test_an_alert_is_one_line_with_its_state_severity_and_key():
    assert watch.alert_line(alert()) == ("alert firing (critical) xid/n1/gpu1/xid79: GPU 1 Xid 79"
                                         " (GPU has fallen off the bus)")
    assert [watch.priority(alert(severity=s)) for s in ("critical", "warning", "info")] == [2, 4, 6]
    assert watch.priority(alert("resolved")) == 5


def test_the_priority_prefix_only_where_stderr_is_the_journal(tmp_path):
    """systemd names its stream in $JOURNAL_STREAM (DEV:INO); a stderr that is anything else,
    or a variable a parent left behind, gets plain text."""
    path = tmp_path / "stream"
    with open(path, "w") as stream:
        st = os.fstat(stream.fileno())
        own = {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}
        watch.Log(None, stream, own).line("journal", 3)
        watch.Log(None, stream, {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino + 1}"}).line("other", 3)
        watch.Log(None, stream, {}).line("none", 3)
    assert path.read_text().splitlines() == [
        "<3>gputop watch: journal", "gputop watch: other", "gputop watch: none"]


def test_a_log_file_gets_whole_lines_after_their_time_appended(tmp_path):
    path = tmp_path / "watch.log"
    path.write_text("before\n")
    log = watch.Log(str(path), io.StringIO(), {})
    log.line(watch.alert_line(alert()), 2)
    log.close()
    lines = path.read_text().splitlines()
    assert lines[0] == "before" and len(lines) == 2
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} gputop watch: alert firing "
                        r"\(critical\) xid/n1/gpu1/xid79: .*", lines[1]), lines[1]


def test_the_docs_show_the_shipped_unit_as_it_is():
    """One unit: docs/gputop-watch.service, which the e2e test verifies and runs; the alerts
    page shows it whole."""
    unit = (ROOT / "docs" / "gputop-watch.service").read_text()
    page = (ROOT / "docs" / "alerts.md").read_text()
    assert f"```ini\n{unit}```\n" in page
