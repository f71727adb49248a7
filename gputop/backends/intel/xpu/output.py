"""Pure readers of xpu-smi v1's text: the CSV of `discovery --dump`, the CSV of `dump`, the table
of `ps`.

The shapes are those of the captures in tests/fixtures/intel (see SOURCES.md there):

- `discovery --dump IDS`: a header of property names joined by ``,``, then one row per device
  with every text value in double quotes (``0,"Intel(R) Arc(TM) A310 LP Graphics","2450 MHz",
  "N/A"``); an empty line may come before or after.
- `dump -d DEVS -m IDS`: ``Timestamp, DeviceId, <one column per metric>``, cells joined by
  ``, `` and right-aligned; a metric the device does not report is an empty cell, a cell of
  spaces or ``N/A`` (all three captured), which is None here, never 0.
- `ps`: ``PID  Command  DeviceID  SHR  MEM`` padded with spaces; SHR and MEM in kB (`ps -h`).

Anything else (an error message, the table xpu-smi v2 prints) is one XpuSmiParseError naming
the command and the first line printed.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

from gputop.backends.base import BackendError
from gputop.core import untrusted

NA = "N/A"
TIMESTAMP, DEVICE_ID = "Timestamp", "DeviceId"  # the first two columns of every `dump` row
DISCOVERY_DEVICE_ID = "Device ID"  # the column of `discovery --dump` property 1
PS_HEADER = ("PID", "Command", "DeviceID", "SHR", "MEM")

# "2450 MHz", "32768.00 MiB": a number, then its unit
_WITH_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(\S+)\s*$")
# a `ps` row: the command name is padded to a width but not cut, so it may touch the device id
_PS_ROW = re.compile(r"^\s*(\d+)\s+(.*?)\s*(\d+)\s+(\d+)\s+(\d+)\s*$")


class XpuSmiParseError(BackendError):
    """xpu-smi printed what is not the output asked for."""


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return untrusted.printable(line, 200)


def _lines(text: str, what: str, header_start: str) -> list[str]:
    """The non-empty lines from the header on; XpuSmiParseError where the first non-empty line
    is not the header."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or not lines[0].lstrip().startswith(header_start):
        first = _first_line(text)
        raise XpuSmiParseError(f"`{what}` printed no {header_start!r} header"
                               + (f": {first}" if first else ""))
    if len(lines) > untrusted.MAX_PROCESSES:
        raise XpuSmiParseError(f"`{what}` printed more than {untrusted.MAX_PROCESSES} lines")
    return lines


def number(cell: str | None) -> float | None:
    """A cell as a number; None for an empty cell, spaces, ``N/A`` or what is not a finite
    number."""
    if cell is None:
        return None
    cell = cell.strip()
    if not cell or cell == NA:
        return None
    value = untrusted.parse_float(cell)
    return value if value is not None and untrusted.number_ok(value) else None


def with_unit(cell: str | None, unit: str) -> float | None:
    """``"2450 MHz"`` as 2450.0 where ``unit`` is "MHz"; None for ``N/A``, another unit, or
    what is not a number and its unit."""
    m = _WITH_UNIT.match(cell or "")
    if m is None or m.group(2) != unit:
        return None
    return number(m.group(1))


def text(cell: str | None) -> str | None:
    """A printable string; None for an empty cell or ``N/A``."""
    if cell is None or not cell.strip() or cell.strip() == NA:
        return None
    return untrusted.printable(cell.strip(), 200)


def discovery(out: str, what: str) -> list[dict[str, str]]:
    """The rows of `discovery --dump IDS`, each ``{property name: cell}`` (quotes removed)."""
    lines = _lines(out, what, DISCOVERY_DEVICE_ID)
    rows = list(csv.reader(lines))
    header = [name.strip() for name in rows[0]]
    found = []
    for row in rows[1:]:
        if len(row) != len(header):
            raise XpuSmiParseError(f"`{what}`: a row of {len(row)} cells under a header of "
                                   f"{len(header)}")
        found.append(dict(zip(header, row, strict=True)))
    if len(found) > untrusted.MAX_DEVICES:
        raise XpuSmiParseError(f"`{what}`: more than {untrusted.MAX_DEVICES} devices")
    return found


@dataclass(frozen=True)
class Dump:
    """One `dump` answer: each device's last row, ``{column header: number or None}``, and the
    headers printed."""

    rows: dict[int, dict[str, float | None]]
    headers: tuple[str, ...]


def dump(out: str, what: str) -> Dump:
    """Read `dump -d DEVS -m IDS`: the last row of each device (a run of ``-n 1`` prints one)."""
    lines = _lines(out, what, TIMESTAMP)
    header = [name.strip() for name in lines[0].split(",")]
    if header[:2] != [TIMESTAMP, DEVICE_ID]:
        raise XpuSmiParseError(f"`{what}`: its header does not start with {TIMESTAMP}, "
                               f"{DEVICE_ID}")
    rows: dict[int, dict[str, float | None]] = {}
    for line in lines[1:]:
        cells = line.split(",")
        if len(cells) != len(header):
            raise XpuSmiParseError(f"`{what}`: a row of {len(cells)} cells under a header of "
                                   f"{len(header)}: {untrusted.printable(line.strip(), 200)}")
        device = untrusted.parse_int(cells[1].strip())
        if device is None:
            raise XpuSmiParseError(f"`{what}`: {cells[1].strip()!r} is no device id")
        rows[device] = {name: number(cell) for name, cell in zip(header[2:], cells[2:],
                                                                   strict=True)}
    if len(rows) > untrusted.MAX_DEVICES:
        raise XpuSmiParseError(f"`{what}`: more than {untrusted.MAX_DEVICES} devices")
    return Dump(rows, tuple(header[2:]))


@dataclass(frozen=True)
class ToolProcess:
    """One row of `ps`: a process and the device memory it holds on one device."""

    pid: int
    name: str | None
    device: int
    memory_kib: int


def ps(out: str, what: str) -> list[ToolProcess]:
    """The rows of `ps` (a row that is not one is an error: the table is the tool's own)."""
    lines = _lines(out, what, PS_HEADER[0])
    if lines[0].split() != list(PS_HEADER):
        raise XpuSmiParseError(f"`{what}`: its header is not {' '.join(PS_HEADER)}")
    found = []
    for line in lines[1:]:
        m = _PS_ROW.match(line)
        pid = untrusted.parse_int(m.group(1)) if m else None
        device = untrusted.parse_int(m.group(3)) if m else None
        mem = untrusted.parse_int(m.group(5)) if m else None
        if m is None or pid is None or device is None or mem is None:
            raise XpuSmiParseError(f"`{what}`: not a process row: "
                                   f"{untrusted.printable(line.strip(), 200)}")
        found.append(ToolProcess(pid, text(m.group(2)), device, mem))
    return found
