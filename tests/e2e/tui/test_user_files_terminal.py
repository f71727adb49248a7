"""The dashboard in a real terminal with a bad file among those it reads at every start: a FIFO
among the user's themes (it hung before the first frame) and a journal nested 100 000 deep (a
RecursionError traceback). Each start reaches its first frame and says what is wrong (#24)."""

from __future__ import annotations

import os

from gputop.advisor import journal


def test_a_fifo_among_the_themes_does_not_stop_the_dashboard(pane, tmp_path):  # noqa: F811
    themes = tmp_path / "cfg" / "gputop" / "themes"
    themes.mkdir(parents=True)
    os.mkfifo(themes / "waits.toml")
    (themes / "mine.toml").write_text('name = "mine"\n[colors]\nprimary = "#ff0000"\n')
    p = pane("--theme", "mine")
    p.wait_for("PID", timeout=20)  # Textual's first frame: the theme folder was read
    p.wait_for("a FIFO", timeout=10)  # the warning naming the file it skipped
    p.tmux("send-keys", "-t", "t", "C-c")
    assert p.exit_status(timeout=5) == 0


def test_a_deep_journal_is_a_notice_not_a_crash_at_every_start(pane, tmp_path):  # noqa: F811
    folder = tmp_path / "state" / "gputop"
    folder.mkdir(parents=True)
    (folder / f"{journal.PREFIX}h-sim-x.json").write_text("[" * 100_000 + "]" * 100_000)
    p = pane()
    p.wait_for("PID", timeout=20)
    p.wait_for("nested deeper", timeout=10)
    p.tmux("send-keys", "-t", "t", "C-c")
    assert p.exit_status(timeout=5) == 0
    assert (folder / f"{journal.PREFIX}h-sim-x.json").exists()  # left for the user to see
