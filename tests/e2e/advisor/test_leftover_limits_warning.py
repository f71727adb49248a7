"""The dashboard at start, over limits that a killed advisor (a real process, now gone) left
changed: it warns, names the journal, and says how to put them back."""

from __future__ import annotations

import os

import pytest

from tests.support.advise import dead_pid, open_sim
from tests.support.tui import notices


@pytest.mark.parametrize("readonly", [False, True])
async def test_the_dashboard_warns_at_start_of_limits_a_killed_run_left_changed(adv, readonly):
    from gputop.advisor import journal
    from gputop.tui.app import GputopApp

    backend = open_sim(adv)
    info = backend.info()
    path = journal.journal_path(info.host, "sim", [info.devices[3].uuid])
    journal.write(path, info.host, "sim", [journal.JournalEntry(3, info.devices[3].uuid, 700.0)])
    doc = path.read_text().replace(f'"pid": {os.getpid()}', f'"pid": {dead_pid()}')
    path.write_text(doc)
    app = GputopApp(backend, autostart=False, readonly=readonly)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        [note] = [n for n in notices(app) if n.title == "power limits"]
        assert note.severity == "error"
        assert "did not put them back" in note.message and str(path) in note.message
        assert ("Press a then r" in note.message) is not readonly
        assert "gputop advise --restore" in note.message


