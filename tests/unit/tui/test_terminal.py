"""How the dashboard reads its terminal's keys: a lone esc is a key once the escape delay (25 ms,
or ESCDELAY) is over, not at Textual's next look 100 ms on; an esc and a key typed after the delay
are two keys."""

from __future__ import annotations

import time

import pytest
from textual import constants, events
from textual._xterm_parser import XTermParser
from textual.app import App

from gputop.tui.terminal import KeyReader, TerminalDriver, escape_delay_s


@pytest.fixture(name="delay")
def delay_fixture(monkeypatch):
    """Textual's escape delay, as the driver sets it (put back after the test)."""
    monkeypatch.setattr(constants, "ESCAPE_DELAY", 0.01)
    return 0.01


def keys(found) -> list[str]:
    return [e.key for e in found if isinstance(e, events.Key)]


@pytest.mark.parametrize("environ, seconds", [
    ({}, 0.025), ({"ESCDELAY": "100"}, 0.1), ({"ESCDELAY": "0"}, 0.001),
    ({"ESCDELAY": "soon"}, 0.025)])
def test_escdelay_says_how_long_a_lone_esc_waits(environ, seconds):
    assert escape_delay_s(environ) == seconds


async def test_the_driver_gives_textual_the_escape_delay(monkeypatch):
    monkeypatch.setattr(constants, "ESCAPE_DELAY", 0.1)  # Textual's own, put back after
    monkeypatch.delenv("ESCDELAY", raising=False)
    TerminalDriver(App())
    assert constants.ESCAPE_DELAY == 0.025


def test_a_lone_esc_is_a_key_as_soon_as_the_delay_is_over(delay):
    reader = KeyReader(XTermParser(False))
    assert keys(reader.take("\x1b")) == []  # it may start a sequence
    # the next look is when the delay ends, not Textual's 100 ms later
    assert delay < reader.wait() < 0.05
    time.sleep(reader.wait())
    assert keys(reader.take(None)) == ["escape"]
    assert reader.wait() is None  # nothing pending: the thread sleeps until input comes


def test_an_esc_and_a_key_after_the_delay_are_two_keys_not_alt_key(delay):
    reader = KeyReader(XTermParser(False))
    list(reader.take("\x1b"))
    time.sleep(reader.wait())  # the key comes after the delay, before the thread looked again
    assert keys(reader.take("d")) == ["escape", "d"]


def test_a_sequence_in_one_read_is_still_one_key(delay):
    reader = KeyReader(XTermParser(False))
    assert keys(reader.take("\x1b[A")) == ["up"]


async def test_the_idle_input_thread_sleeps_until_a_key_or_the_exit(monkeypatch):
    """With nothing typed the input thread does not wake (Textual's woke ten times a second,
    a fifth of a millisecond of CPU each); a key and the exit event each wake it at once."""
    import os
    import threading

    read_fd, write_fd = os.pipe()  # stands in for the terminal
    driver = TerminalDriver(App())
    driver.fileno = read_fd
    got: list = []
    monkeypatch.setattr(driver, "process_message", got.append)
    looks: list = []
    take = KeyReader.take
    monkeypatch.setattr(KeyReader, "take", lambda self, text: (looks.append(text),
                                                               *take(self, text)))
    thread = threading.Thread(target=driver._read_input, daemon=True)
    try:
        thread.start()
        time.sleep(0.35)
        assert looks == []  # idle: no wake-up at all
        os.write(write_fd, b"a")
        deadline = time.monotonic() + 2
        while keys(got) != ["a"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert keys(got) == ["a"]
        started = time.monotonic()
        driver.exit_event.set()
        thread.join(2)
        assert not thread.is_alive() and time.monotonic() - started < 0.05
    finally:
        driver.exit_event.set()
        thread.join(2)
        driver.close()
        os.close(read_fd)
        os.close(write_fd)
