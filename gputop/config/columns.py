"""Declare the process table's columns once, below both the settings file that names them
(``columns``, ``sort``) and the table that draws them (``gputop.tui.widgets.processes``)."""

from __future__ import annotations

from typing import NamedTuple


class ProcessColumn(NamedTuple):
    """One column of the process table: its key (as a settings file names it), title, width in
    cells (0: the rest of the line), alignment and the key that sorts by it."""

    key: str
    title: str
    width: int
    right: bool
    sort_key: str


# In the table's order.
PROCESS_TABLE: tuple[ProcessColumn, ...] = (
    ProcessColumn("gpu", "GPU", 4, True, "G"),
    ProcessColumn("pid", "PID", 7, True, "P"),
    ProcessColumn("user", "USER", 10, False, "U"),
    ProcessColumn("job", "JOB", 12, False, "J"),
    ProcessColumn("gpu_mem", "GPU MEM", 8, True, "M"),
    ProcessColumn("sm", "SM%", 4, True, "S"),
    ProcessColumn("cpu", "CPU%", 6, True, "C"),
    ProcessColumn("host_mem", "HOST MEM", 8, True, "H"),
    ProcessColumn("time", "TIME", 7, True, "T"),  # "13h53m", "123d04h": never cut
    # How long it has held its GPU idle (gputop.analysis.waste); shown while some process has.
    ProcessColumn("idle", "IDLE", 6, True, "I"),
    ProcessColumn("command", "COMMAND", 0, False, "O"),
)
PROCESS_COLUMNS = tuple(c.key for c in PROCESS_TABLE)
