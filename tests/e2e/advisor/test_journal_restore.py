"""A journal whose writer was killed (a real process that has exited) is found and put back by
the next run, and one that could not be restored keeps the commands that would."""

from __future__ import annotations

import json

import pytest

from gputop.advisor import journal
from tests.support.advise import dead_pid, state_sim


# ------------------------------------------------------------------ journal
def test_restore_failure_keeps_the_journal_and_names_the_commands(adv, monkeypatch):
    b = state_sim(adv)
    guard = journal.LimitGuard(b, [3])
    guard.begin()
    guard.set({3: 400.0})
    monkeypatch.setenv("GPUTOP_SIM_NO_PERMISSION", "1")
    with pytest.raises(journal.RestoreFailed, match=r"sudo nvidia-smi -i 3 -pl 700"):
        guard.finish()
    [path] = adv.journals()
    monkeypatch.delenv("GPUTOP_SIM_NO_PERMISSION")
    # As if this process had been killed: the journal's writer is gone.
    doc = json.loads(path.read_text())
    doc["pid"] = dead_pid()
    path.write_text(json.dumps(doc))
    again = state_sim(adv)
    [left] = journal.leftovers(again)
    assert left.entries[0].original_w == 700
    assert journal.restore_from(again, left) == [(3, 400.0, 700.0)]
    assert adv.journals() == [] and state_sim(adv).power_limit(3) == 700


