"""Stop-signal handlers: installed for the signals that are live, never over an ignored one."""

from __future__ import annotations

import signal

import pytest

from gputop.advisor.safety import SignalExit, SignalGuard
from gputop.core.stop_signals import catch, release


@pytest.fixture
def sighup_ignored():
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    yield
    signal.signal(signal.SIGHUP, old)


def test_catch_skips_an_ignored_signal_and_release_puts_back_the_rest(sighup_ignored):
    def handler(signum, frame):
        pass

    before_int = signal.getsignal(signal.SIGINT)
    previous = catch(handler)
    assert set(previous) == {signal.SIGINT, signal.SIGTERM}
    assert signal.getsignal(signal.SIGINT) is handler
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    release(previous)
    assert signal.getsignal(signal.SIGINT) is before_int
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert previous == {}


def test_the_advisor_guard_leaves_nohup_alone_and_still_catches_sigterm(sighup_ignored):
    with SignalGuard() as guard:
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        signal.raise_signal(signal.SIGHUP)  # ignored: nothing happens
        assert guard.received is None
        with pytest.raises(SignalExit) as exc:
            signal.raise_signal(signal.SIGTERM)
        assert exc.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
