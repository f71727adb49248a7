"""What the command channel puts in a command's environment, how it splits a command, and the
mail the mail channel hands to sendmail (their real runs: tests/e2e/alerts)."""

from __future__ import annotations

import email
import email.policy
import json

import pytest

from gputop.alerts.notify import command, mail
from tests.support.notify import make_alert


def test_the_environment_names_every_field_and_label():
    env = command.alert_environment(make_alert(labels=(("user", "alice"), ("job.id", "42"))))
    assert {k: v for k, v in env.items() if k != "GPUTOP_ALERT_JSON"} == {
        "GPUTOP_ALERT_RULE": "hot", "GPUTOP_ALERT_STATE": "firing",
        "GPUTOP_ALERT_SEVERITY": "critical",
        "GPUTOP_ALERT_SUMMARY": "GPU 0 at 91 °C for 2m (limit 85)",
        "GPUTOP_ALERT_KEY": "hot/node-a/gpu0/0", "GPUTOP_ALERT_NODE": "node-a",
        "GPUTOP_ALERT_GPU": "0", "GPUTOP_ALERT_AT": "2026-01-01T12:00:00Z",
        "GPUTOP_ALERT_SINCE": "2026-01-01T11:58:00Z",
        "GPUTOP_ALERT_LABEL_USER": "alice", "GPUTOP_ALERT_LABEL_JOB_ID": "42"}
    assert json.loads(env["GPUTOP_ALERT_JSON"])["alert"]["key"] == "hot/node-a/gpu0/0"


def test_absent_values_are_empty_and_no_nul_reaches_the_environment():
    env = command.alert_environment(make_alert(node=None, gpu=None, since=None, summary="a\0b"))
    assert env["GPUTOP_ALERT_NODE"] == env["GPUTOP_ALERT_GPU"] == env["GPUTOP_ALERT_SINCE"] == ""
    assert env["GPUTOP_ALERT_SUMMARY"] == "ab"


def test_a_command_string_is_split_without_a_shell_unless_asked():
    assert command.command_argv("notify.sh --to 'ops team' $HOME", False) == [
        "notify.sh", "--to", "ops team", "$HOME"]
    assert command.command_argv("echo $HOME | logger", True) == [
        "/bin/sh", "-c", "echo $HOME | logger"]
    assert command.command_argv(["a b", "c"], False) == ["a b", "c"]
    for bad in ["", "   ", "'unbalanced", []]:
        with pytest.raises(ValueError):
            command.command_argv(bad, False)


def test_the_mail_is_plain_text_with_one_line_headers():
    raw = mail.message(make_alert(rule="hot\nBcc: victim@example.com",
                                  summary="line one\r\nBcc: other@example.com"),
                       ["ops@example.com", "oncall@example.com"], "gputop@node-a")
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert msg["To"] == "ops@example.com, oncall@example.com"
    assert msg["From"] == "gputop@node-a"
    assert msg["Bcc"] is None  # nothing in an alert's text becomes a header
    assert msg["Subject"] == "[gputop] FIRING critical: hot^JBcc: victim@example.com on node-a GPU 0"
    assert msg.get_content_type() == "text/plain"
    body = msg.get_content()
    assert body.startswith("line one^M^JBcc: other@example.com\n\nRule")
    assert "Node      node-a" in body


def test_sendmail_is_found_on_path_then_in_the_usual_folders(tmp_path, monkeypatch):
    monkeypatch.setattr(mail, "SENDMAIL_DIRS", (str(tmp_path / "sbin"),))
    assert mail.find_sendmail({"PATH": str(tmp_path / "bin")}) is None
    (tmp_path / "sbin").mkdir()
    fake = tmp_path / "sbin" / "sendmail"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert mail.find_sendmail({"PATH": str(tmp_path / "bin")}) == str(fake)
    (tmp_path / "bin").mkdir()
    first = tmp_path / "bin" / "sendmail"
    first.write_text("#!/bin/sh\n")
    first.chmod(0o755)
    assert mail.find_sendmail({"PATH": str(tmp_path / "bin")}) == str(first)
