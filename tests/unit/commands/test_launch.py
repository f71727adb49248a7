"""The dashboard's first frame: plain text on the alternate screen before Textual loads."""

import io

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.commands.dashboard import draw_first_frame, first_frame_text
from gputop.tui.text.wants import DASHBOARD


def test_the_first_frame_has_a_row_per_gpu_cut_to_the_terminal():
    backend = SimBackend(BackendOptions(scenario="crowded"))
    backend.open()
    snap = backend.sample(wants=DASHBOARD)
    text = first_frame_text(snap, 80, 24)
    lines = text.split("\r\n")
    assert all(len(line) <= 80 for line in lines)
    assert sum("H100" in line for line in lines) == 8
    assert len(first_frame_text(snap, 80, 5).split("\r\n")) == 5  # header, 3 GPUs, the notice


def test_no_first_frame_where_stdout_is_not_a_terminal():
    out = io.StringIO()
    backend = SimBackend(BackendOptions())
    backend.open()
    assert draw_first_frame(backend.sample(), out) is False
    assert out.getvalue() == ""
