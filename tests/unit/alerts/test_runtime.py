"""Alerting: the engine, the journal and the channels fed snapshot by snapshot."""

from __future__ import annotations

import pytest

from gputop.alerts.runtime import AlertConfig, Alerting, read_config
from gputop.core.errors import UsageError
from gputop.core.model import Device, Snapshot

HOT = {"rule": [{"name": "hot", "when": "temperature_c > 85 for 1m", "cooldown": "10m"}],
       "defaults": False}


def snap(t: float, temp: float) -> Snapshot:
    return Snapshot(host="node1", time=t, backend="sim",
                    devices=(Device(index=0, temperature_c=temp),))


def config(tmp_path, table=HOT) -> AlertConfig:
    return read_config({**table, "journal": str(tmp_path / "alerts.jsonl")}, "config.toml")


def test_a_transition_is_journalled_listed_and_acknowledged(tmp_path):
    alerting = Alerting(config(tmp_path))
    try:
        assert alerting.observe(snap(0, 90)) == ()
        (fired,) = alerting.observe(snap(60, 91))
        assert fired.state == "firing" and alerting.firing == (fired,)
        assert alerting.unacknowledged() == 1
        alerting.acknowledge(fired)
        assert alerting.unacknowledged() == 0
        (resolved,) = alerting.observe(snap(70, 80))
        assert [(r.alert.state, r.acknowledged) for r in alerting.history()] == [
            ("resolved", False), ("firing", True)]
        lines = (tmp_path / "alerts.jsonl").read_text().splitlines()
        assert [line.count('"state":"firing"') for line in lines] == [1, 0]
    finally:
        alerting.close(1)


def test_a_restart_reads_the_journal_and_does_not_fire_again(tmp_path):
    first = Alerting(config(tmp_path))
    first.observe(snap(0, 90))
    assert first.observe(snap(60, 91))
    first.close(1)
    again = Alerting(config(tmp_path))
    try:
        assert again.observe(snap(65, 92)) == ()
        assert [a.rule for a in again.firing] == ["hot"]
    finally:
        again.close(1)


def test_a_journal_that_cannot_be_written_is_said_once_and_alerts_still_fire(tmp_path):
    said: list[str] = []
    alerting = Alerting(config(tmp_path), on_error=said.append)
    try:
        (tmp_path / "alerts.jsonl").mkdir()  # gone under us: no file can be opened there
        alerting.observe(snap(0, 90))
        assert alerting.observe(snap(60, 91))
        assert alerting.observe(snap(70, 80))
        assert len(said) == 1 and "cannot write the alert journal" in said[0]
        assert [r.alert.state for r in alerting.history()] == ["resolved", "firing"]
    finally:
        alerting.close(1)


def test_bad_channel_names_the_file_and_channel():
    with pytest.raises(UsageError, match=r"c\.toml: alerts\.channel\.ops"):
        read_config({"channel": {"ops": {"type": "pager"}}}, "c.toml")


def test_alerting_without_a_webhook_or_mail_channel_loads_no_network_or_mail_code():
    """The dashboard builds its Alerting at start: ssl, http and email cost it megabytes."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from gputop.alerts.runtime import Alerting, read_config\n"
            "table = {'channel': {'b': {'type': 'command', 'command': ['true']}}}\n"
            "Alerting(read_config(table, 'c.toml')).close(0.1)\n"
            "print(sorted(m for m in ('ssl', 'http.client', 'email.message', 'urllib.request')"
            " if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_the_start_up_check_of_every_kind_of_channel_loads_no_network_or_mail_code(tmp_path):
    """The dashboard checks its channels before the first frame (issue #26's memory)."""
    import subprocess
    import sys

    sendmail = tmp_path / "sendmail"
    sendmail.write_text("#!/bin/sh\n")
    sendmail.chmod(0o755)
    code = ("import sys\n"
            "from gputop.alerts.notify.channels import check, parse\n"
            "table = {'hook': {'type': 'webhook', 'url': 'https://hooks.example.com/x'},\n"
            f"         'mail': {{'type': 'mail', 'to': ['ops@example.com'], 'sendmail': '{sendmail}'}},\n"
            "         'cmd': {'type': 'command', 'command': ['true']}}\n"
            "check(parse(table, 'c.toml'), 'c.toml')\n"
            "print(sorted(m for m in ('ssl', 'http.client', 'email.message', 'urllib.request')"
            " if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
