"""Parse the `npu-smi info` table: its chips, their readings and the process table.

Every layout npu-smi prints is handled (its own printf formats are the reference):

- 310 / 310B / 310P: two lines per chip, several chips per card, ``Chip  Device`` (the device
  number is the chip's logic id), DDR ``Memory-Usage`` only, ``NA`` power or bus id, versions with
  and without the ``Hugepages-Usage`` column and with or without a process table;
- 910 / 910A and the 910B family (910B1..B4, 910B2C): ``HBM-Usage(MB)`` beside ``Memory-Usage``
  (on the 910B generation Memory-Usage always reads ``0 / 0``);
- 910_93 (A3): ``Chip  Phy-ID``, two chips per NPU, power ``-`` on chip 1;
- 950: ``NPU ID`` and ``NPU Util(%)`` columns, a process table without a Chip column.

Anything that is not one of these shapes raises :class:`NpuSmiParseError`, which names the line;
no other exception escapes a parser (property-tested with hypothesis).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gputop.backends.npu_smi.syntax import (
    BUS_ID,
    HEALTH_WORD,
    NA_WORDS,
    NpuSmiParseError,
    float_field,
    int_field,
    numbered_lines,
)

# Layout names follow npu-smi's own chip types (NPU_CHIP_310, _910, _910_93, _950).
LAYOUT_310 = "310"
LAYOUT_910 = "910"
LAYOUT_910_93 = "910_93"
LAYOUT_950 = "950"


# ------------------------------------------------------------------ records


@dataclass(frozen=True, slots=True)
class ChipRow:
    """One chip of the `npu-smi info` table. Memory figures are in npu-smi's "MB" (MiB)."""

    npu_id: int
    chip_id: int | None  # None on the 950 layout, which has no chip column
    device_id: int | None  # 310 layout: the chip's logic id ("Device")
    phy_id: int | None  # 910_93 layout: "Phy-ID"
    name: str | None
    health: str
    power_w: float | None  # None for NA, and "-" (the second chip of an A3 NPU)
    temperature_c: int | None
    hugepages_used: int | None
    hugepages_total: int | None
    bus_id: str | None
    aicore_pct: int | None  # "AICore(%)" or, on 950, "NPU Util(%)"
    memory_used_mb: int | None  # DDR
    memory_total_mb: int | None
    hbm_used_mb: int | None  # None where the table has no HBM column
    hbm_total_mb: int | None
    line: int = 0


@dataclass(frozen=True, slots=True)
class ProcessRow:
    npu_id: int
    chip_id: int | None  # None where the table has no Chip column (950)
    pid: int
    name: str | None  # None where npu-smi printed an empty name
    memory_mb: int | None
    line: int = 0


@dataclass(frozen=True, slots=True)
class NpuTable:
    """The whole `npu-smi info` table."""

    tool_version: str
    version: str  # the software (driver) version after "Version:"
    layout: str
    has_hugepages: bool
    has_hbm: bool
    chips: tuple[ChipRow, ...]
    has_process_table: bool
    processes: tuple[ProcessRow, ...]
    idle_npus: tuple[int, ...]  # "No running processes found in NPU n"
    warnings: tuple[str, ...] = ()  # e.g. "[WARNING]The driver package may not be ..."
    elided: bool = False  # a literal "..." line: someone cut rows out of this copy


def _squash(cell: str) -> str:
    return " ".join(cell.split())


def _cells(no: int, line: str) -> list[str]:
    if len(line) < 2 or not (line.startswith("|") and line.endswith("|")):
        raise NpuSmiParseError("expected a table row between '|' borders", no, line)
    return line[1:-1].split("|")


def _fraction(tokens: list[str], what: str, no: int, line: str) -> tuple[int | None, int | None]:
    """``used / total``; npu-smi lets a five-digit figure touch the slash (``20701/ 65536``)."""
    if len(tokens) != 3 or tokens[1] != "/":
        raise NpuSmiParseError(f"{what} is not 'used / total'", no, line)
    return int_field(tokens[0], what, no, line), int_field(tokens[2], what, no, line)


def _tokens(cell: str) -> list[str]:
    return cell.replace("/", " / ").split()


# ------------------------------------------------------------------ the `npu-smi info` table

_TITLE = re.compile(r"\|\s*npu-smi\s+(\S+)\s+Version:\s*(\S+)\s*\|")
_SEP = re.compile(r"\+[-=+]*\+")
_STATS1 = re.compile(r"Power\(W\) Temp\(C\)( Hugepages-Usage\(page\))?")
_STATS2 = re.compile(r"(AICore\(%\)|NPU Util\(%\)) Memory-Usage\(MB\)( HBM-Usage\(MB\))?")
_NO_PROCS = re.compile(r"No running processes found in NPU (\d{1,9})")
_CHIP_COLUMNS = {"Chip Device": LAYOUT_310, "Chip": LAYOUT_910, "Chip Phy-ID": LAYOUT_910_93}


@dataclass
class _Header:
    layout: str
    hugepages: bool
    hbm: bool
    chip_cols: int  # numbers in the chip cell of the second line: 2, 1, 2 or 0 (950)


def _is_sep(line: str) -> bool:
    return bool(_SEP.fullmatch(line))


def _is_warning(line: str) -> bool:
    return line.startswith("[WARNING]")


def _parse_header(rows: list[tuple[int, str]]) -> _Header:
    (n1, h1), (n2, h2) = rows
    c1 = [_squash(c) for c in _cells(n1, h1)]
    c2 = [_squash(c) for c in _cells(n2, h2)]
    if len(c1) == 4 and c1[:3] == ["NPU ID", "Name", "Health"]:
        if len(c2) != 4 or c2[:3] != ["", "", "Bus-Id"]:
            raise NpuSmiParseError("second header line does not match the 950 layout", n2, h2)
        layout = LAYOUT_950
    elif len(c1) == 3 and c1[:2] == ["NPU Name", "Health"]:
        if len(c2) != 3 or c2[0] not in _CHIP_COLUMNS or c2[1] != "Bus-Id":
            raise NpuSmiParseError("unknown second header line", n2, h2)
        layout = _CHIP_COLUMNS[c2[0]]
    else:
        raise NpuSmiParseError("unknown table header", n1, h1)
    m1 = _STATS1.fullmatch(c1[-1])
    if not m1:
        raise NpuSmiParseError("unknown power/temperature columns", n1, h1)
    m2 = _STATS2.fullmatch(c2[-1])
    if not m2:
        raise NpuSmiParseError("unknown utilization/memory columns", n2, h2)
    if (m2.group(1) == "NPU Util(%)") != (layout == LAYOUT_950):
        raise NpuSmiParseError("utilization column does not match the layout", n2, h2)
    hbm = m2.group(2) is not None
    if layout == LAYOUT_310 and hbm:
        raise NpuSmiParseError("HBM column in a 310-family table", n2, h2)
    chip_cols = {LAYOUT_310: 2, LAYOUT_910: 1, LAYOUT_910_93: 2, LAYOUT_950: 0}[layout]
    return _Header(layout, m1.group(1) is not None, hbm, chip_cols)


def _parse_chip(hdr: _Header, first: tuple[int, str], second: tuple[int, str]) -> ChipRow:
    n1, l1 = first
    n2, l2 = second
    c1 = _cells(n1, l1)
    c2 = _cells(n2, l2)
    want = 4 if hdr.layout == LAYOUT_950 else 3
    if len(c1) != want:
        raise NpuSmiParseError(f"expected {want} columns", n1, l1)
    if len(c2) != want:
        raise NpuSmiParseError(f"expected {want} columns", n2, l2)
    if hdr.layout == LAYOUT_950:
        npu_id = int_field(c1[0].strip(), "NPU ID", n1, l1, allow_na=False)
        name = c1[1].strip()
        if c2[0].strip() or c2[1].strip():
            raise NpuSmiParseError("950 layout: the second line's first columns must be empty",
                                   n2, l2)
        chip_nums: list[int | None] = []
    else:
        head = c1[0].split(None, 1)
        if not head:
            raise NpuSmiParseError("missing NPU id", n1, l1)
        npu_id = int_field(head[0], "NPU id", n1, l1, allow_na=False)
        name = head[1].strip() if len(head) > 1 else ""
        nums = c2[0].split()
        if len(nums) != hdr.chip_cols:
            raise NpuSmiParseError(f"expected {hdr.chip_cols} number(s) in the chip column",
                                   n2, l2)
        chip_nums = [int_field(t, "chip number", n2, l2, allow_na=False) for t in nums]
    health = c1[-2].strip()
    if not HEALTH_WORD.fullmatch(health):
        raise NpuSmiParseError(f"health is not a word ({health!r})", n1, l1)

    t1 = _tokens(c1[-1])
    want1 = 5 if hdr.hugepages else 2
    if len(t1) != want1:
        raise NpuSmiParseError("power/temperature cell does not match the header", n1, l1)
    power = float_field(t1[0], "power", n1, l1)
    temp = int_field(t1[1], "temperature", n1, l1)
    hp_used = hp_total = None
    if hdr.hugepages:
        hp_used, hp_total = _fraction(t1[2:], "Hugepages-Usage", n1, l1)

    bus = c2[-2].strip()
    if bus in NA_WORDS:
        bus_id = None
    elif BUS_ID.fullmatch(bus):
        bus_id = bus.upper()
    else:
        raise NpuSmiParseError(f"bus id is not a PCI address ({bus!r})", n2, l2)

    t2 = _tokens(c2[-1])
    want2 = 7 if hdr.hbm else 4
    if len(t2) != want2:
        raise NpuSmiParseError("utilization/memory cell does not match the header", n2, l2)
    util = int_field(t2[0], "AICore utilization", n2, l2)
    mem_used, mem_total = _fraction(t2[1:4], "Memory-Usage", n2, l2)
    hbm_used = hbm_total = None
    if hdr.hbm:
        hbm_used, hbm_total = _fraction(t2[4:7], "HBM-Usage", n2, l2)

    chip_id = chip_nums[0] if chip_nums else None
    second_num = chip_nums[1] if len(chip_nums) > 1 else None
    assert npu_id is not None
    return ChipRow(
        npu_id=npu_id,
        chip_id=chip_id,
        device_id=second_num if hdr.layout == LAYOUT_310 else None,
        phy_id=second_num if hdr.layout == LAYOUT_910_93 else None,
        name=name or None,
        health=health,
        power_w=power,
        temperature_c=temp,
        hugepages_used=hp_used,
        hugepages_total=hp_total,
        bus_id=bus_id,
        aicore_pct=util,
        memory_used_mb=mem_used,
        memory_total_mb=mem_total,
        hbm_used_mb=hbm_used,
        hbm_total_mb=hbm_total,
        line=n1,
    )


def _parse_process_header(no: int, line: str) -> bool:
    """True for a process-table header; whether it has a Chip column is returned by the caller."""
    cells = [_squash(c) for c in _cells(no, line)]
    return (
        len(cells) == 4
        and cells[0] in ("NPU Chip", "NPU ID")
        and cells[1:] == ["Process id", "Process name", "Process memory(MB)"]
    )


def _parse_process(no: int, line: str, with_chip: bool) -> ProcessRow | int:
    """A process row, or the NPU id of a "No running processes found in NPU n" row."""
    cells = _cells(no, line)
    if len(cells) == 1:
        m = _NO_PROCS.fullmatch(_squash(cells[0]))
        if not m:
            raise NpuSmiParseError("unknown process-table row", no, line)
        return int(m.group(1))
    if len(cells) < 4:
        raise NpuSmiParseError("process row with fewer than 4 columns", no, line)
    ids = cells[0].split()
    if len(ids) != (2 if with_chip else 1):
        raise NpuSmiParseError("process row: unexpected NPU/chip column", no, line)
    npu_id = int_field(ids[0], "NPU id", no, line, allow_na=False)
    chip_id = int_field(ids[1], "chip id", no, line, allow_na=False) if with_chip else None
    pid = int_field(cells[1].strip(), "process id", no, line, allow_na=False)
    # A process name may itself hold a '|': everything between pid and memory is the name.
    name = "|".join(cells[2:-1]).strip()
    memory = int_field(cells[-1].strip(), "process memory", no, line)
    assert npu_id is not None and pid is not None
    return ProcessRow(npu_id, chip_id, pid, name or None, memory, no)


def parse_table(text: str) -> NpuTable:
    """Parse the output of plain `npu-smi info`."""
    lines = numbered_lines(text)
    warnings: list[str] = []
    body: list[tuple[int, str]] = []
    for no, line in lines:
        if _is_warning(line):
            warnings.append(line)
        else:
            body.append((no, line))
    if not body:
        raise NpuSmiParseError("no table in the output")

    pos = 0

    def take(kind: str) -> tuple[int, str]:
        nonlocal pos
        if pos >= len(body):
            last = body[-1][0] if body else 0
            raise NpuSmiParseError(f"output ends where {kind} was expected", last)
        item = body[pos]
        pos += 1
        return item

    def expect_sep() -> None:
        no, line = take("a separator line")
        if not _is_sep(line):
            raise NpuSmiParseError("expected a separator line", no, line)

    expect_sep()
    no, line = take("the title line")
    title = _TITLE.fullmatch(line)
    if not title:
        raise NpuSmiParseError("expected 'npu-smi <version>  Version: <version>'", no, line)
    expect_sep()
    hdr = _parse_header([take("a header line"), take("a header line")])
    expect_sep()

    chips: list[ChipRow] = []
    elided = False
    process_header: tuple[int, str] | None = None
    while pos < len(body):
        no, line = body[pos]
        if _is_sep(line):
            pos += 1
            continue
        if line == "...":
            elided = True
            pos += 1
            continue
        if _looks_row(line) and _parse_process_header(no, line):
            process_header = (no, line)
            pos += 1
            break
        first = take("a chip line")
        second = take("the chip's second line")
        chip = _parse_chip(hdr, first, second)
        if any(c.npu_id == chip.npu_id and c.chip_id == chip.chip_id for c in chips):
            raise NpuSmiParseError("the same NPU and chip listed twice", *first)
        chips.append(chip)
        if pos < len(body):
            sno, sline = body[pos]
            if not _is_sep(sline):
                raise NpuSmiParseError("expected a separator after a chip", sno, sline)

    processes: list[ProcessRow] = []
    idle: list[int] = []
    if process_header is not None:
        with_chip = _squash(_cells(*process_header)[0]) == "NPU Chip"
        if hdr.layout == LAYOUT_950 and with_chip or hdr.layout != LAYOUT_950 and not with_chip:
            raise NpuSmiParseError("process table does not match the chip table's layout",
                                   *process_header)
        expect_sep()
        while pos < len(body):
            no, line = body[pos]
            pos += 1
            if _is_sep(line):
                continue
            if line == "...":
                elided = True
                continue
            got = _parse_process(no, line, with_chip)
            if isinstance(got, int):
                idle.append(got)
            else:
                processes.append(got)

    return NpuTable(
        tool_version=title.group(1),
        version=title.group(2),
        layout=hdr.layout,
        has_hugepages=hdr.hugepages,
        has_hbm=hdr.hbm,
        chips=tuple(chips),
        has_process_table=process_header is not None,
        processes=tuple(processes),
        idle_npus=tuple(idle),
        warnings=tuple(warnings),
        elided=elided,
    )


def _looks_row(line: str) -> bool:
    return len(line) >= 2 and line.startswith("|") and line.endswith("|")
