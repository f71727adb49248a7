"""Where the power-limit journals are kept: their folder and their names.

Apart from ``journal.py`` so that the dashboard's start can look for journals a killed run
left behind without loading the journal's reader (and json); it is loaded only where one is
there.
"""

from __future__ import annotations

import os
from pathlib import Path

PREFIX = "power-limits-"


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME")
    if not base or not os.path.isabs(base):  # the XDG spec: relative paths are to be ignored
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "gputop"


def journal_files(folder: Path | None = None) -> list[Path]:
    """The journals in ``folder`` (default: ``state_dir()``), sorted by name; none where the
    folder cannot be read."""
    try:
        return sorted((folder or state_dir()).glob(f"{PREFIX}*.json"))
    except OSError:
        return []
