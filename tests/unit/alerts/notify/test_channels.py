"""The settings file's [alerts.channel.NAME] tables: read into configs, bad ones refused in one
line naming the file, the channel and what is wrong (never a secret), and built into channels."""

from __future__ import annotations

import io

import pytest

from gputop.alerts.notify import channels, mail
from gputop.alerts.notify.channels import (
    CommandConfig,
    MailConfig,
    TerminalConfig,
    WebhookConfig,
    build,
    parse,
)
from gputop.alerts.notify.dispatch import DeliveryPolicy
from gputop.core.errors import UsageError
from gputop.core.userfile import load_toml
from tests.support.notify import SECRET_PATH

WHERE = "~/.config/gputop/config.toml"
URL = "https://hooks.slack.com" + SECRET_PATH


def read(toml: str):
    return parse(load_toml(toml)["alerts"]["channel"], WHERE)


def refused(toml: str) -> str:
    with pytest.raises(UsageError) as info:
        read(toml)
    text = str(info.value)
    assert "\n" not in text and text.startswith(WHERE + ": alerts.channel"), text
    assert "SECRET" not in text and "token" not in text, text
    return text


def test_every_type_is_read():
    found = read(f"""
        [alerts.channel.ops]
        type = "webhook"
        url = "{URL}"
        format = "slack"
        headers = {{ Authorization = "Bearer s3cret" }}
        timeout = 2.5
        retries = 0
        queue = 5
        [alerts.channel.page]
        type = "command"
        command = "notify-pager --urgent 'gpu team'"
        [alerts.channel.log]
        type = "command"
        command = "logger -t gputop \\"$GPUTOP_ALERT_SUMMARY\\""
        shell = true
        [alerts.channel.ding]
        type = "bell"
        [alerts.channel.desk]
        type = "osc777"
        tmux = true
        [alerts.channel.mail]
        type = "mail"
        to = ["ops@example.com", "oncall@example.com"]
        from = "gputop@node-a.example.com"
    """)
    assert found == (
        WebhookConfig("ops", DeliveryPolicy(timeout_s=2.5, retries=0, queue=5), URL, "slack",
                      (("Authorization", "Bearer s3cret"),)),
        CommandConfig("page", DeliveryPolicy(), ("notify-pager", "--urgent", "gpu team")),
        CommandConfig("log", DeliveryPolicy(),
                      ("/bin/sh", "-c", 'logger -t gputop "$GPUTOP_ALERT_SUMMARY"'), True),
        TerminalConfig("ding", DeliveryPolicy(), "bell"),
        TerminalConfig("desk", DeliveryPolicy(), "osc777", True),
        MailConfig("mail", DeliveryPolicy(), ("ops@example.com", "oncall@example.com"),
                   "gputop@node-a.example.com"),
    )


def test_a_webhook_config_never_shows_its_url_or_header_values():
    (config,) = read(f"""
        [alerts.channel.ops]
        type = "webhook"
        url = "{URL}"
        headers = {{ Authorization = "Bearer s3cret" }}
    """)
    for text in (repr(config), str(config), config.describe()):
        assert "SECRET" not in text and "s3cret" not in text, text
        assert "https://hooks.slack.com/…" in text
    assert "Authorization" in repr(config)


@pytest.mark.parametrize(("toml", "says"), [
    ('[alerts]\nchannel = 3', "alerts.channel: must be tables"),
    ('[alerts.channel."bad name"]\ntype = "bell"', '"bad name" is not a channel name'),
    ("[alerts.channel.x]\nurl = 'https://h/'", "alerts.channel.x: says no type"),
    ("[alerts.channel.x]\ntype = 'pager'", "alerts.channel.x.type: must be one of webhook, "
                                           "command, bell, osc9, osc777, mail (got \"pager\")"),
    ("[alerts.channel.x]\ntype = 'bell'\nurl = 'https://h/'",
     "alerts.channel.x: unknown key 'url' for a bell channel (known: type, timeout, retries, "
     "queue, tmux)"),
    ("[alerts.channel.x]\ntype = 'webhook'", "alerts.channel.x: a webhook needs a url"),
    (f"[alerts.channel.x]\ntype = 'webhook'\nurl = 'ftp://h{SECRET_PATH}'",
     "alerts.channel.x.url: must begin with http:// or https:// (ftp://h/…)"),
    (f"[alerts.channel.x]\ntype = 'webhook'\nurl = 'https://{SECRET_PATH}'",
     "alerts.channel.x.url: names no host"),
    (f"[alerts.channel.x]\ntype = 'webhook'\nurl = 'https://h{SECRET_PATH} x'",
     "alerts.channel.x.url: holds a space or a control character (https://h/…)"),
    (f"[alerts.channel.x]\ntype = 'webhook'\nurl = 'https://h:99999{SECRET_PATH}'",
     "alerts.channel.x.url: is not a URL"),
    ("[alerts.channel.x]\ntype = 'webhook'\nurl = 'https://h/'\nformat = 'teams2'",
     "alerts.channel.x.format: must be one of generic, slack, teams, discord"),
    ("[alerts.channel.x]\ntype = 'webhook'\nurl = 'https://h/'\nheaders = { 'X-A' = \"a\\nB: b\" }",
     "alerts.channel.x.headers: header X-A's value holds a line break"),
    ("[alerts.channel.x]\ntype = 'webhook'\nurl = 'https://h/'\nheaders = { 'X-A' = 'tök' }",
     "alerts.channel.x.headers: header X-A's value must be printable ASCII"),
    ("[alerts.channel.x]\ntype = 'webhook'\nurl = 'https://h/'\nheaders = { 'X A' = 'token' }",
     "alerts.channel.x.headers: header name 'X A' is not a valid HTTP header name"),
    ("[alerts.channel.x]\ntype = 'webhook'\nurl = 'https://h/'\ntimeout = 0",
     "alerts.channel.x.timeout: must be a number from 0.1 to 300 s (got 0)"),
    ("[alerts.channel.x]\ntype = 'bell'\ntimeout = inf",
     "alerts.channel.x.timeout: must be a number from 0.1 to 300 s (got inf)"),
    ("[alerts.channel.x]\ntype = 'bell'\nretries = 1.5",
     "alerts.channel.x.retries: must be a whole number from 0 to 20 (got 1.5)"),
    ("[alerts.channel.x]\ntype = 'bell'\nqueue = 0",
     "alerts.channel.x.queue: must be a whole number from 1 to 10000 (got 0)"),
    ("[alerts.channel.x]\ntype = 'osc9'\ntmux = 'yes'", "alerts.channel.x.tmux: must be true or false"),
    ("[alerts.channel.x]\ntype = 'command'", "alerts.channel.x: a command channel needs a command"),
    ("[alerts.channel.x]\ntype = 'command'\ncommand = ''", "alerts.channel.x.command: the command is empty"),
    ("[alerts.channel.x]\ntype = 'command'\ncommand = \"a 'b\"",
     "alerts.channel.x.command: No closing quotation"),
    ("[alerts.channel.x]\ntype = 'command'\ncommand = ['a', 1]",
     "alerts.channel.x.command: must be a string or a list of strings"),
    ("[alerts.channel.x]\ntype = 'command'\ncommand = ['a']\nshell = true",
     "alerts.channel.x.command: shell = true takes the command as one string"),
    ("[alerts.channel.x]\ntype = 'mail'", "alerts.channel.x: a mail channel needs to ="),
    ("[alerts.channel.x]\ntype = 'mail'\nto = []", "alerts.channel.x.to: must be an address"),
    ("[alerts.channel.x]\ntype = 'mail'\nto = 'ops'", 'alerts.channel.x.to: "ops" is not an e-mail address'),
    ("[alerts.channel.x]\ntype = 'mail'\nto = 'a@b.c'\nfrom = 'x@y\\nBcc: z@w'",
     "alerts.channel.x.from:"),
    ("[alerts.channel.x]\ntype = 'mail'\nto = 'a@b.c'\nsendmail = 'sendmail'",
     "alerts.channel.x.sendmail: must be the absolute path of sendmail"),
])
def test_a_bad_channel_is_one_line_naming_the_file_the_channel_and_the_problem(toml, says):
    text = refused(toml)
    assert says in text, text


def test_build_makes_each_channel_with_its_policy_and_a_label_free_of_secrets(tmp_path):
    program = tmp_path / "notify.sh"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    fake_sendmail = tmp_path / "sendmail"
    fake_sendmail.write_text("#!/bin/sh\n")
    fake_sendmail.chmod(0o755)
    configs = read(f"""
        [alerts.channel.ops]
        type = "webhook"
        url = "{URL}"
        retries = 1
        [alerts.channel.page]
        type = "command"
        command = ["notify.sh", "--now"]
        [alerts.channel.desk]
        type = "osc9"
        [alerts.channel.mail]
        type = "mail"
        to = "ops@example.com"
    """)
    built = build(configs, WHERE, io.BytesIO(), environ={"PATH": str(tmp_path), "TMUX": "x"})
    assert built.skipped == ()
    assert [c.notifier.name for c in built.channels] == ["ops", "page", "desk", "mail"]
    assert [c.label for c in built.channels] == [
        "webhook https://hooks.slack.com/… (generic)", "command notify.sh",
        "terminal osc9 through tmux", "mail to ops@example.com"]
    assert built.channels[0].policy.retries == 1
    assert built.channels[1].stop is not None and built.channels[3].stop is not None
    for channel in built.channels:
        assert "SECRET" not in repr(channel), repr(channel)


def test_terminal_channels_are_skipped_where_there_is_no_terminal():
    configs = read("[alerts.channel.ding]\ntype = 'bell'")
    built = build(configs, WHERE, None, environ={})
    assert built.channels == ()
    assert built.skipped == (f"{WHERE}: alerts.channel.ding: bell needs a terminal: skipped here",)


def test_a_mail_channel_without_sendmail_is_refused_at_start(tmp_path, monkeypatch):
    monkeypatch.setattr(mail, "SENDMAIL_DIRS", (str(tmp_path / "sbin"), str(tmp_path / "lib")))
    configs = read("[alerts.channel.m]\ntype = 'mail'\nto = 'ops@example.com'")
    with pytest.raises(UsageError) as info:
        build(configs, WHERE, environ={"PATH": str(tmp_path / "bin")})
    text = str(info.value)
    assert text == (f"{WHERE}: alerts.channel.m: no sendmail on PATH, in {tmp_path}/sbin or "
                    f"{tmp_path}/lib: install a mail transfer agent (postfix, exim, msmtp-mta, "
                    "nullmailer) or remove the channel")
    configs = read(f"[alerts.channel.m]\ntype = 'mail'\nto = 'a@b.c'\nsendmail = '{tmp_path}/no'")
    with pytest.raises(UsageError, match=f"alerts.channel.m: no sendmail {tmp_path}/no: install"):
        build(configs, WHERE, environ={})


def test_a_command_whose_program_is_missing_is_refused_at_start(tmp_path):
    for command, says in [("nosuch-notifier --x", "command: no program 'nosuch-notifier' on PATH"),
                          (f"{tmp_path}/nosuch", f"command: {tmp_path}/nosuch is not an executable"),
                          (f"{tmp_path}", f"command: {tmp_path} is not an executable")]:
        configs = read(f"[alerts.channel.c]\ntype = 'command'\ncommand = '{command}'")
        with pytest.raises(UsageError, match=f"{WHERE}: alerts.channel.c: {says}"):
            build(configs, WHERE, environ={"PATH": str(tmp_path)})
    shell = read("[alerts.channel.c]\ntype = 'command'\ncommand = 'nosuch | x'\nshell = true")
    assert build(shell, WHERE, environ={"PATH": str(tmp_path)}).channels  # the shell's to find


def test_channel_names_are_exposed_for_the_rules_check():
    assert channels.TYPES == ("webhook", "command", "bell", "osc9", "osc777", "mail")
