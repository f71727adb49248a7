"""The bell and OSC 9 / OSC 777 notifications: exact bytes, and nothing an alert's text can
smuggle out of the sequence."""

from __future__ import annotations

import io

import pytest

from gputop.alerts.model import DeliveryError
from gputop.alerts.notify import terminal
from tests.support.notify import make_alert

HOSTILE = "a\x1b]52;c;ZXZpbA==\x07b\x1b\\c\x9cd\x9b2Je\nf\rg\x00h\u202ei;j\x7f"


def assert_one_sequence(data: bytes, start: bytes) -> str:
    """The bytes are one OSC: ``start``, printable text, one BEL at the end and nowhere else."""
    assert data.startswith(start) and data.endswith(b"\x07")
    inner = data[len(start):-1].decode("utf-8")
    assert inner.isprintable(), inner  # no C0, DEL, C1 (0x9c is ST), bidi override
    return inner


def test_osc9_and_osc777_bytes():
    assert terminal.osc9("GPU 3 is hot") == b"\x1b]9;GPU 3 is hot\x07"
    assert terminal.osc9("3 GPUs hot") == b"\x1b]9;gputop: 3 GPUs hot\x07"
    assert terminal.osc777("gputop", "GPU 3 is hot") == b"\x1b]777;notify;gputop;GPU 3 is hot\x07"
    assert terminal.bell() == b"\x07"


@pytest.mark.parametrize("text", ["4;1;50", "9;hello", "0"])
def test_osc9_text_never_reads_as_a_conemu_command(text):
    inner = assert_one_sequence(terminal.osc9(text), b"\x1b]9;")
    assert not inner[:1].isdigit()


def test_nothing_in_alert_text_escapes_osc9():
    inner = assert_one_sequence(terminal.osc9(HOSTILE), b"\x1b]9;")
    assert "^[]52;c;ZXZpbA==^G" in inner  # shown, not obeyed


def test_nothing_in_alert_text_escapes_osc777_or_adds_a_field():
    data = terminal.osc777(HOSTILE, HOSTILE)
    inner = assert_one_sequence(data, b"\x1b]777;notify;")
    assert inner.count(";") == 1  # title ; body: nothing splits them further


def test_text_is_one_line_and_cut():
    inner = assert_one_sequence(terminal.osc9("x" * 5000), b"\x1b]9;")
    assert len(inner) == terminal.MAX_TEXT and inner.endswith("…")


def test_tmux_passthrough_doubles_every_escape():
    assert (terminal.tmux_passthrough(b"\x1b]9;hi\x07")
            == b"\x1bPtmux;\x1b\x1b]9;hi\x07\x1b\\")


def test_alert_bytes_for_each_kind():
    alert = make_alert()
    assert terminal.alert_bytes("bell", alert, tmux=True) == b"\x07"
    assert terminal.alert_bytes("osc9", alert) == (
        "\x1b]9;FIRING critical: hot on node-a GPU 0: GPU 0 at 91 °C for 2m (limit 85)\x07"
    ).encode()
    assert terminal.alert_bytes("osc777", alert) == (
        "\x1b]777;notify;gputop: FIRING critical: hot on node-a GPU 0;"
        "GPU 0 at 91 °C for 2m (limit 85)\x07").encode()
    assert terminal.alert_bytes("osc777", alert, tmux=True).startswith(b"\x1bPtmux;\x1b\x1b]777;")


def test_the_notifier_writes_and_flushes_and_a_gone_terminal_is_a_delivery_error():
    out = io.BytesIO()
    notifier = terminal.TerminalNotifier("desk", "osc9", out)
    notifier.send(make_alert(), 1.0)
    assert out.getvalue().startswith(b"\x1b]9;FIRING critical")
    out.close()
    with pytest.raises(DeliveryError, match="cannot write to the terminal"):
        notifier.send(make_alert(), 1.0)
