"""Shared helpers for the query-mode tests."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tests.support.paths import FIXTURES

FIX = FIXTURES / "nvidia-smi"
MIG_FIX = FIX.parent / "mig"  # captures of a MIG-enabled H100
ALL_FIELDS_CAPTURES = sorted([*FIX.glob("csv_all-fields_*.csv"), *MIG_FIX.glob("csv_all-fields_*.csv")])
CSV_CAPTURES = sorted([*FIX.glob("csv_*.csv"), *MIG_FIX.glob("csv_*.csv")])


def gputop_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "gputop", *args]


def help_names(path: Path) -> list[list[str]]:
    """[[canonical, alias…], …] as a --help-query-* text lists them."""
    out = []
    for line in path.read_text().splitlines():
        if line.startswith('"') and not re.match(r'^"\d:', line):
            out.append(re.findall(r'"([^"]+)"', line))
    return out


def header_names(path: Path) -> list[str]:
    return [re.sub(r" \[[^]]*\]$", "", t) for t in header_titles(path)]


def header_titles(path: Path) -> list[str]:
    return path.read_text().split("\n", 1)[0].split(", ")


def query_flag(names: list[str]) -> str:
    if "gpu_utilization" in names:
        return "--query-accounted-apps"
    if "pid" in names:
        return "--query-compute-apps"
    return "--query-gpu"
