"""The command channel and the mail channel running real programs: a small sh script that writes
its environment and standard input to files of tmp_path, one that fails, one that hangs with a
child, and a stand-in for sendmail (no MTA is installed here: a script named sendmail on PATH
that writes its arguments and the message it reads to a file, as a real sendmail -t would take
it)."""

from __future__ import annotations

import email
import email.policy
import json
import time
from pathlib import Path

import pytest

from gputop.alerts.model import DeliveryError
from gputop.alerts.notify import mail, payloads
from gputop.alerts.notify.channels import build, parse
from gputop.alerts.notify.command import CommandNotifier
from gputop.core.userfile import load_toml
from tests.support.notify import make_alert
from tests.support.procs import child_pids_fixture, gone_soon  # noqa: F401 - the fixture


def script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_a_command_gets_the_alert_in_its_environment_and_on_its_standard_input(tmp_path):
    out = tmp_path / "out"
    notify = script(tmp_path, "notify.sh",
                    f'env | grep ^GPUTOP_ALERT_ | grep -v _JSON= | sort > "{out}.env"\n'
                    f'printf "%s" "$GPUTOP_ALERT_JSON" > "{out}.envjson"\n'
                    f'cat > "{out}.stdin"\n'
                    f'printf "%s\\n" "$@" > "{out}.args"\n')
    alert = make_alert(summary="GPU 0 is at 91 °C; see 'nvidia-smi' && $(reboot)")
    CommandNotifier("page", [str(notify), "--to", "ops team"], {"PATH": "/usr/bin:/bin"}).send(
        alert, 5.0)
    env = dict(line.split("=", 1) for line in Path(f"{out}.env").read_text().splitlines())
    assert env["GPUTOP_ALERT_RULE"] == "hot" and env["GPUTOP_ALERT_GPU"] == "0"
    assert env["GPUTOP_ALERT_SUMMARY"] == alert.summary  # as it is: nothing ran it
    assert env["GPUTOP_ALERT_LABEL_USER"] == "alice"
    generic = json.loads(payloads.body("generic", alert))
    stdin = Path(f"{out}.stdin").read_text()
    assert json.loads(stdin) == generic and stdin.count("\n") == 1 and stdin.endswith("}\n")
    assert json.loads(Path(f"{out}.envjson").read_text()) == generic
    assert Path(f"{out}.args").read_text() == "--to\nops team\n"


def test_a_command_that_fails_is_a_delivery_error_with_its_code_and_message(tmp_path):
    failing = script(tmp_path, "pager.sh", 'echo "pager: no route to host" >&2\nexit 3\n')
    with pytest.raises(DeliveryError) as info:
        CommandNotifier("page", [str(failing)]).send(make_alert(), 5.0)
    assert str(info.value) == "pager.sh: exit 3: pager: no route to host"


def test_a_command_past_its_timeout_is_killed_with_all_it_started(tmp_path, child_pids):
    pidfile = tmp_path / "child.pid"
    hung = script(tmp_path, "hung.sh", f'sleep 60 &\necho $! > "{pidfile}"\nwait\n')
    began = time.monotonic()
    with pytest.raises(DeliveryError, match=r"^hung.sh ran past 0.5 s: killed$"):
        CommandNotifier("page", [str(hung)]).send(make_alert(), 0.5)
    assert time.monotonic() - began < 2.0
    pid = int(pidfile.read_text())
    child_pids.append(pid)
    assert gone_soon(pid), "the command's child outlived it"


def test_mail_goes_through_the_sendmail_found_on_path(tmp_path, monkeypatch):
    monkeypatch.setattr(mail, "SENDMAIL_DIRS", ())  # only the stand-in, whatever this host has
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    got = tmp_path / "mail"
    script(bin_dir, "sendmail", f'printf "%s\\n" "$@" > "{got}.args"\ncat > "{got}.msg"\n')
    configs = parse(load_toml("""
        [m]
        type = "mail"
        to = ["ops@example.com", "oncall@example.com"]
        from = "gputop@node-a.example.com"
    """), "config.toml")
    (channel,) = build(configs, "config.toml", environ={"PATH": str(bin_dir)}).channels
    channel.notifier.send(make_alert(), 5.0)
    assert Path(f"{got}.args").read_text() == "-t\n-oi\n"
    msg = email.message_from_bytes(Path(f"{got}.msg").read_bytes(), policy=email.policy.default)
    assert msg["To"] == "ops@example.com, oncall@example.com"
    assert msg["From"] == "gputop@node-a.example.com"
    assert msg["Subject"] == "[gputop] FIRING critical: hot on node-a GPU 0"
    assert msg.get_content().startswith("GPU 0 at 91 °C for 2m (limit 85)\n")


def test_a_sendmail_that_refuses_is_a_delivery_error(tmp_path):
    refusing = script(tmp_path, "sendmail", 'echo "sendmail: fatal: no recipients" >&2\nexit 75\n')
    notifier = mail.MailNotifier("m", str(refusing), ["ops@example.com"])
    with pytest.raises(DeliveryError) as info:
        notifier.send(make_alert(), 5.0)
    assert str(info.value) == "sendmail: exit 75: sendmail: fatal: no recipients"
