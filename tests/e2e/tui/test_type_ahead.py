"""Keys typed after `/` are the filter's text, however they arrive: here `/sleep` is one write to
a real pty, so the dashboard reads every key at once (a paste, fast typing over a slow SSH link).
Before (#27), `s` opened the saturation panel and `p` paused sampling."""

from __future__ import annotations

import os
import time

from tests.support.pty_lab import FIRST_FRAME, Run, gputop_argv


def test_slash_and_its_text_in_one_write_filter_and_open_nothing(tmp_path):
    env = {**os.environ, "TERM": "xterm-256color", "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONUNBUFFERED": "1"}
    env.pop("NO_COLOR", None)
    run = Run(gputop_argv("--backend", "sim", "--scenario", "mixed"), env, size=(120, 40))
    try:
        run.wait_for(FIRST_FRAME)
        time.sleep(0.5)
        start = len(run.output())
        run.type(b"/sleep")  # one write
        time.sleep(1.0)
        run.type(b"\r")
        run.wait_for(b"filter 'sleep'")
        after = run.output()[start:]
        assert b"Saturation: how busy" not in after and b"PAUSED" not in after
    finally:
        run.type(b"\x03")
        run.close()
