"""Find gputop's own data files (gputop/data/: themes, scenarios, tables): the one place that
says where they are.

A path on disk, not ``importlib.resources``: gputop is always installed as a folder, and the
resources reader of a folder imports ``zipfile`` (0.3 MB of the dashboard's memory) to tell."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"


def read_text(*parts: str) -> str:
    """Return the text of the data file at ``parts`` under gputop/data/ (UTF-8)."""
    return DATA.joinpath(*parts).read_text(encoding="utf-8")
