"""Shared helpers for the query-mode tests."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import FIXTURES

FIX = FIXTURES / "nvidia-smi"
MIG_FIX = FIX.parent / "mig"  # captures of a MIG-enabled H100
ALL_FIELDS_CAPTURES = sorted([*FIX.glob("csv_all-fields_*.csv"), *MIG_FIX.glob("csv_all-fields_*.csv")])
CSV_CAPTURES = sorted([*FIX.glob("csv_*.csv"), *MIG_FIX.glob("csv_*.csv")])


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


def replay_argv(path: Path, *extra: str) -> list[str]:
    """Return the options that replay the log at ``path`` through query mode, all its columns."""
    names = header_names(path)
    return ["--backend", "replay", "--replay", str(path),
            f"{query_flag(names)}={','.join(names)}", "--format=csv", *extra]


# A log's header whose cells the replay-bounds tests fill with hostile numbers.
HOSTILE_LOG_HEADER = ("timestamp, index, clocks_event_reasons.active, power.draw [W], "
                      "memory.used [MiB], pci.device_id, temperature.gpu")


# The columns of the logs the write-error tests cut short, and the simulator's default node.
CUT_LOG_FIELDS = "timestamp,index,name,utilization.gpu,memory.used,power.draw,clocks.sm"
CUT_LOG_COLUMNS = CUT_LOG_FIELDS.count(",") + 1
SIM_GPUS = 8
# What the signal tests log: every kind of cell, the clock-event mask among them.
SIGNAL_LOG_FIELDS = ("timestamp,index,name,power.draw,memory.used,utilization.gpu,"
                     "clocks_event_reasons.active")


def whole_rows(log: Path, stderr: str, reason: str) -> list[str]:
    """Check the one-line error and the file; return the rows."""
    assert "Traceback" not in stderr
    match = re.fullmatch(rf"gputop: cannot write to {re.escape(str(log))}: {reason} "
                         r"\(cut back to its last whole row: (\d+) rows?\)\n", stderr)
    assert match, stderr
    data = log.read_bytes()
    assert data.endswith(b"\n"), data[-80:]
    lines = data.decode().split("\n")[:-1]
    assert lines[0].startswith("timestamp, index, name, utilization.gpu [%]")
    rows = lines[1:]
    assert len(rows) == int(match[1])
    assert all(len(row.split(", ")) == CUT_LOG_COLUMNS for row in rows)
    assert len(rows) % SIM_GPUS == 0  # a sample's rows are one write: whole samples only
    return rows
