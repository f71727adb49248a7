"""Killing the advisor mid-sweep never leaves a changed power limit behind (real subprocesses)."""

from __future__ import annotations

import signal

import pytest

from tests.support.advise import Running

SWEEP = ("--sweep", "--sim-speed", "40", "--settle", "4", "--measure", "6", "--json")
ORIGINAL = [700.0] * 8

POINTS = [
    ("step 1/14: settling at 665 W", 665.0),  # right after the first change
    ("step 2/14: measuring at 630 W", 630.0),  # mid-measurement at a lowered limit
    ("baseline after step 2: measuring", None),  # back at the original, journal still open
]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("point,changed_to", POINTS, ids=["first-change", "measuring", "baseline"])
def test_signal_mid_sweep_restores_limits(adv, signum, point, changed_to):
    run = Running(adv.argv(*SWEEP), adv.env)
    run.wait_for(point)
    if changed_to is not None:
        assert set(adv.state_limits()) == {changed_to}  # the limit really was changed
    assert len(adv.journals()) == 1
    run.proc.send_signal(signum)
    rc, err = run.finish()
    assert rc == 128 + signum, err
    assert f"interrupted by {signal.Signals(signum).name}" in err
    assert adv.limits() == ORIGINAL
    assert adv.journals() == []


def test_second_signal_during_restore_does_not_cut_it_short(adv):
    run = Running(adv.argv(*SWEEP), adv.env)
    run.wait_for("step 2/14: measuring at 630 W")
    run.proc.send_signal(signal.SIGTERM)
    run.proc.send_signal(signal.SIGINT)
    run.proc.send_signal(signal.SIGHUP)
    rc, err = run.finish()
    assert rc in (128 + signal.SIGTERM, 128 + signal.SIGINT, 128 + signal.SIGHUP), err
    assert "Traceback" not in err
    assert adv.limits() == ORIGINAL
    assert adv.journals() == []


def test_sigkill_leaves_a_journal_that_restore_acts_on(adv):
    run = Running(adv.argv(*SWEEP), adv.env)
    run.wait_for("step 2/14: measuring at 630 W")
    run.proc.kill()
    run.finish()
    # SIGKILL cannot be caught: the limit stays changed, as a new process reads it ...
    assert adv.limits() == [630.0] * 8
    assert len(adv.journals()) == 1
    # ... the next start says so, and refuses to sweep from the changed limits ...
    passive = adv.run("--window", "2", "--sim-speed", "50")
    assert passive.returncode == 0
    assert "did not put them back" in passive.stderr and "--restore" in passive.stderr
    refused = adv.run("--sweep", "--sim-speed", "50")
    assert refused.returncode == 1 and "--restore" in refused.stderr
    assert adv.limits() == [630.0] * 8
    # ... and --restore puts them back and removes the journal.
    restored = adv.run("--restore")
    assert restored.returncode == 0, restored.stderr
    assert "630" in restored.stdout and "700" in restored.stdout
    assert adv.limits() == ORIGINAL
    assert adv.journals() == []
    again = adv.run("--restore")
    assert again.returncode == 0 and "nothing to restore" in again.stdout
