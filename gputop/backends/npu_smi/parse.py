"""Pure parsers for npu-smi's text: the `npu-smi info` table and the key-value queries.

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
from dataclasses import dataclass, field

from gputop.backends.base import BackendError

HEALTH_STATES = ("OK", "Warning", "Alarm", "Critical", "UNKNOWN")  # npu_common.c, in this order

# Layout names follow npu-smi's own chip types (NPU_CHIP_310, _910, _910_93, _950).
LAYOUT_310 = "310"
LAYOUT_910 = "910"
LAYOUT_910_93 = "910_93"
LAYOUT_950 = "950"


class NpuSmiParseError(BackendError):
    """npu-smi printed something this parser does not recognise."""

    def __init__(self, reason: str, line: int = 0, text: str = "") -> None:
        self.reason = reason
        self.line = line
        self.text = text
        where = f"line {line}: " if line else ""
        shown = text if len(text) <= 100 else text[:97] + "..."
        suffix = f": {shown!r}" if text else ""
        super().__init__(f"unrecognised npu-smi output, {where}{reason}{suffix}")


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


# ------------------------------------------------------------------ small helpers

_INT = re.compile(r"-?\d{1,18}")
_FLOAT = re.compile(r"-?\d{1,18}(?:\.\d{1,9})?")
_BUS = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]{1,2}")
_NA = ("NA", "N/A")


def _lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, text without surrounding whitespace) for each non-blank line.

    Leading whitespace is dropped too: copies of the output are often indented (a tab shown as
    spaces in a blog, a Markdown list indent), and the layout never depends on it.
    """
    out = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line:
            out.append((no, line))
    return out


def _int(tok: str, what: str, no: int, line: str, allow_na: bool = True) -> int | None:
    if allow_na and tok in _NA:
        return None
    if not _INT.fullmatch(tok):
        raise NpuSmiParseError(f"{what} is not a whole number ({tok!r})", no, line)
    return int(tok)


def _float(tok: str, what: str, no: int, line: str) -> float | None:
    if tok in _NA or tok == "-":
        return None
    if not _FLOAT.fullmatch(tok):
        raise NpuSmiParseError(f"{what} is not a number ({tok!r})", no, line)
    return float(tok)


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
    return _int(tokens[0], what, no, line), _int(tokens[2], what, no, line)


def _tokens(cell: str) -> list[str]:
    return cell.replace("/", " / ").split()


# ------------------------------------------------------------------ the `npu-smi info` table

_TITLE = re.compile(r"\|\s*npu-smi\s+(\S+)\s+Version:\s*(\S+)\s*\|")
_SEP = re.compile(r"\+[-=+]*\+")
_STATS1 = re.compile(r"Power\(W\) Temp\(C\)( Hugepages-Usage\(page\))?")
_STATS2 = re.compile(r"(AICore\(%\)|NPU Util\(%\)) Memory-Usage\(MB\)( HBM-Usage\(MB\))?")
_NO_PROCS = re.compile(r"No running processes found in NPU (\d{1,9})")
_HEALTH = re.compile(r"[A-Za-z]{1,20}")
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
        npu_id = _int(c1[0].strip(), "NPU ID", n1, l1, allow_na=False)
        name = c1[1].strip()
        if c2[0].strip() or c2[1].strip():
            raise NpuSmiParseError("950 layout: the second line's first columns must be empty",
                                   n2, l2)
        chip_nums: list[int | None] = []
    else:
        head = c1[0].split(None, 1)
        if not head:
            raise NpuSmiParseError("missing NPU id", n1, l1)
        npu_id = _int(head[0], "NPU id", n1, l1, allow_na=False)
        name = head[1].strip() if len(head) > 1 else ""
        nums = c2[0].split()
        if len(nums) != hdr.chip_cols:
            raise NpuSmiParseError(f"expected {hdr.chip_cols} number(s) in the chip column",
                                   n2, l2)
        chip_nums = [_int(t, "chip number", n2, l2, allow_na=False) for t in nums]
    health = c1[-2].strip()
    if not _HEALTH.fullmatch(health):
        raise NpuSmiParseError(f"health is not a word ({health!r})", n1, l1)

    t1 = _tokens(c1[-1])
    want1 = 5 if hdr.hugepages else 2
    if len(t1) != want1:
        raise NpuSmiParseError("power/temperature cell does not match the header", n1, l1)
    power = _float(t1[0], "power", n1, l1)
    temp = _int(t1[1], "temperature", n1, l1)
    hp_used = hp_total = None
    if hdr.hugepages:
        hp_used, hp_total = _fraction(t1[2:], "Hugepages-Usage", n1, l1)

    bus = c2[-2].strip()
    if bus in _NA:
        bus_id = None
    elif _BUS.fullmatch(bus):
        bus_id = bus.upper()
    else:
        raise NpuSmiParseError(f"bus id is not a PCI address ({bus!r})", n2, l2)

    t2 = _tokens(c2[-1])
    want2 = 7 if hdr.hbm else 4
    if len(t2) != want2:
        raise NpuSmiParseError("utilization/memory cell does not match the header", n2, l2)
    util = _int(t2[0], "AICore utilization", n2, l2)
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
    npu_id = _int(ids[0], "NPU id", no, line, allow_na=False)
    chip_id = _int(ids[1], "chip id", no, line, allow_na=False) if with_chip else None
    pid = _int(cells[1].strip(), "process id", no, line, allow_na=False)
    # A process name may itself hold a '|': everything between pid and memory is the name.
    name = "|".join(cells[2:-1]).strip()
    memory = _int(cells[-1].strip(), "process memory", no, line)
    assert npu_id is not None and pid is not None
    return ProcessRow(npu_id, chip_id, pid, name or None, memory, no)


def parse_table(text: str) -> NpuTable:
    """Parse the output of plain `npu-smi info`."""
    lines = _lines(text)
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


# ------------------------------------------------------------------ key-value outputs


@dataclass(frozen=True, slots=True)
class KvPair:
    key: str
    value: str
    line: int


_KV = re.compile(r"([^:]+?)\s*:\s*(.*)")


def parse_kv(text: str) -> tuple[tuple[KvPair, ...], ...]:
    """``Key : value`` lines (padded with spaces or tabs) in blank-line separated blocks."""
    blocks: list[tuple[KvPair, ...]] = []
    current: list[KvPair] = []
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            if current:
                blocks.append(tuple(current))
                current = []
            continue
        m = _KV.fullmatch(line)
        if not m or not m.group(1).strip():
            raise NpuSmiParseError("expected 'Key : value'", no, raw.strip())
        current.append(KvPair(m.group(1).strip(), m.group(2).strip(), no))
    if current:
        blocks.append(tuple(current))
    if not blocks:
        raise NpuSmiParseError("no 'Key : value' lines in the output")
    return tuple(blocks)


def norm_key(key: str) -> str:
    """``Temperature (C)`` and ``Temperature(C)`` are the same key; so are case variants."""
    return re.sub(r"\s+\(", "(", " ".join(key.split())).lower()


def _chip_fields(text: str, chip_id: int | None = None) -> dict[str, KvPair]:
    """One chip's fields from a `-t` query: the NPU's header fields plus the chip's block.

    Without ``-c``, npu-smi may print a header block (NPU ID, Chip Count), one block per chip
    and an MCU block (``Chip Name : mcu``); the MCU block is skipped, and of several chip blocks
    the one whose ``Chip ID`` matches (or the first) is taken. Earlier values win.
    """
    fields: dict[str, KvPair] = {}
    chip_blocks: list[dict[str, KvPair]] = []
    for block in parse_kv(text):
        d: dict[str, KvPair] = {}
        for pair in block:
            d.setdefault(norm_key(pair.key), pair)
        name = d.get("chip name")
        if name is not None and name.value.lower() == "mcu":
            continue
        if "chip id" in d and len(d) > 1:
            chip_blocks.append(d)
        else:
            for k, v in d.items():
                fields.setdefault(k, v)
    chosen = None
    for d in chip_blocks:
        cid = d["chip id"].value
        if chip_id is None or (_INT.fullmatch(cid) and int(cid) == chip_id):
            chosen = d
            break
    if chosen is None and chip_blocks:
        chosen = chip_blocks[0]
    for k, v in (chosen or {}).items():
        fields.setdefault(k, v)
    if "npu id" not in fields:
        raise NpuSmiParseError("no 'NPU ID' in the output")
    return fields


def _kv_int(fields: dict[str, KvPair], key: str) -> int | None:
    pair = fields.get(key)
    if pair is None:
        return None
    return _int(pair.value, pair.key, pair.line, f"{pair.key} : {pair.value}")


def _kv_float(fields: dict[str, KvPair], key: str) -> float | None:
    pair = fields.get(key)
    if pair is None:
        return None
    return _float(pair.value, pair.key, pair.line, f"{pair.key} : {pair.value}")


def _kv_str(fields: dict[str, KvPair], key: str) -> str | None:
    pair = fields.get(key)
    if pair is None or pair.value in _NA or not pair.value:
        return None
    return pair.value


@dataclass(frozen=True, slots=True)
class Usages:
    """`npu-smi info -t usages`: percentages are 0-100, capacities in MB (MiB)."""

    npu_id: int | None
    chip_id: int | None
    ddr_capacity_mb: int | None
    ddr_usage_pct: int | None
    hbm_capacity_mb: int | None
    hbm_usage_pct: int | None
    aicore_pct: int | None
    aivector_pct: int | None
    aicpu_pct: int | None
    ctrlcpu_pct: int | None
    ddr_bandwidth_pct: int | None
    hbm_bandwidth_pct: int | None
    npu_util_pct: int | None
    aicube_pct: int | None


def parse_usages(text: str, chip_id: int | None = None) -> Usages:
    f = _chip_fields(text, chip_id)
    return Usages(
        npu_id=_kv_int(f, "npu id"),
        chip_id=_kv_int(f, "chip id"),
        ddr_capacity_mb=_kv_int(f, "ddr capacity(mb)"),
        ddr_usage_pct=_kv_int(f, "ddr usage rate(%)"),
        hbm_capacity_mb=_kv_int(f, "hbm capacity(mb)"),
        hbm_usage_pct=_kv_int(f, "hbm usage rate(%)"),
        aicore_pct=_kv_int(f, "aicore usage rate(%)"),
        aivector_pct=_kv_int(f, "aivector usage rate(%)"),
        aicpu_pct=_kv_int(f, "aicpu usage rate(%)"),
        ctrlcpu_pct=_kv_int(f, "ctrlcpu usage rate(%)"),
        ddr_bandwidth_pct=_kv_int(f, "ddr bandwidth usage rate(%)"),
        hbm_bandwidth_pct=_kv_int(f, "hbm bandwidth usage rate(%)"),
        npu_util_pct=_kv_int(f, "npu utilization(%)"),
        aicube_pct=_kv_int(f, "aicube usage rate(%)"),
    )


@dataclass(frozen=True, slots=True)
class Common:
    """`npu-smi info -t common`."""

    npu_id: int | None
    chip_id: int | None
    memory_usage_pct: int | None
    hbm_usage_pct: int | None
    aicore_pct: int | None
    aicore_freq_mhz: int | None  # rated
    aicore_cur_freq_mhz: int | None
    aicore_count: int | None
    temperature_c: int | None
    power_w: float | None


def parse_common(text: str, chip_id: int | None = None) -> Common:
    f = _chip_fields(text, chip_id)
    return Common(
        npu_id=_kv_int(f, "npu id"),
        chip_id=_kv_int(f, "chip id"),
        memory_usage_pct=_kv_int(f, "memory usage rate(%)"),
        hbm_usage_pct=_kv_int(f, "hbm usage rate(%)"),
        aicore_pct=_kv_int(f, "aicore usage rate(%)"),
        aicore_freq_mhz=_kv_int(f, "aicore freq(mhz)"),
        aicore_cur_freq_mhz=_kv_int(f, "aicore curfreq(mhz)"),
        aicore_count=_kv_int(f, "aicore count"),
        temperature_c=_kv_int(f, "temperature(c)"),
        power_w=_power_field(f),
    )


def _power_field(f: dict[str, KvPair]) -> float | None:
    for key in ("npu real-time power(w)", "real-time power(w)", "power dissipation(w)"):
        if key in f:
            return _kv_float(f, key)
    return None


@dataclass(frozen=True, slots=True)
class Power:
    npu_id: int | None
    chip_id: int | None
    power_w: float | None


def parse_power(text: str, chip_id: int | None = None) -> Power:
    f = _chip_fields(text, chip_id)
    if not any("power" in k and "(w)" in k for k in f):
        raise NpuSmiParseError("no power reading in `-t power` output")
    return Power(_kv_int(f, "npu id"), _kv_int(f, "chip id"), _power_field(f))


@dataclass(frozen=True, slots=True)
class Memory:
    """`npu-smi info -t memory`."""

    npu_id: int | None
    chip_id: int | None
    ddr_capacity_mb: int | None
    ddr_clock_mhz: int | None
    hbm_capacity_mb: int | None
    hbm_clock_mhz: int | None
    hbm_temperature_c: int | None
    hbm_manufacturer_id: str | None


def parse_memory(text: str, chip_id: int | None = None) -> Memory:
    f = _chip_fields(text, chip_id)
    return Memory(
        npu_id=_kv_int(f, "npu id"),
        chip_id=_kv_int(f, "chip id"),
        ddr_capacity_mb=_kv_int(f, "ddr capacity(mb)"),
        ddr_clock_mhz=_kv_int(f, "ddr clock speed(mhz)"),
        hbm_capacity_mb=_kv_int(f, "hbm capacity(mb)"),
        hbm_clock_mhz=_kv_int(f, "hbm clock speed(mhz)"),
        hbm_temperature_c=_kv_int(f, "hbm temperature(c)"),
        hbm_manufacturer_id=_kv_str(f, "hbm manufacturer id"),
    )


@dataclass(frozen=True, slots=True)
class Temp:
    npu_id: int | None
    chip_id: int | None
    temperature_c: int | None


def parse_temp(text: str, chip_id: int | None = None) -> Temp:
    f = _chip_fields(text, chip_id)
    if "temperature(c)" not in f:
        raise NpuSmiParseError("no temperature in `-t temp` output")
    return Temp(_kv_int(f, "npu id"), _kv_int(f, "chip id"), _kv_int(f, "temperature(c)"))


@dataclass(frozen=True, slots=True)
class Health:
    npu_id: int | None
    chip_id: int | None
    health: str | None
    error_code: str | None
    error_information: str | None


def parse_health(text: str, chip_id: int | None = None) -> Health:
    f = _chip_fields(text, chip_id)
    if "health" not in f:
        raise NpuSmiParseError("no 'Health' in `-t health` output")
    health = _kv_str(f, "health")
    if health is not None and not _HEALTH.fullmatch(health):
        pair = f["health"]
        raise NpuSmiParseError("health is not a word", pair.line, pair.value)
    return Health(
        npu_id=_kv_int(f, "npu id"),
        chip_id=_kv_int(f, "chip id"),
        health=health,
        error_code=_kv_str(f, "error code"),
        error_information=_kv_str(f, "error information"),
    )


@dataclass(frozen=True, slots=True)
class Board:
    """`npu-smi info -t board` (the fields gputop uses, plus all of them as ``fields``)."""

    npu_id: int | None
    chip_id: int | None
    product_name: str | None
    serial_number: str | None
    firmware_version: str | None
    software_version: str | None
    pci_bus_id: str | None
    chip_name: str | None
    fields: dict[str, str] = field(default_factory=dict)


def parse_board(text: str, chip_id: int | None = None) -> Board:
    f = _chip_fields(text, chip_id)
    bus = _kv_str(f, "pcie bus info")
    if bus is not None and not _BUS.fullmatch(bus):
        pair = f["pcie bus info"]
        raise NpuSmiParseError("PCIe Bus Info is not a PCI address", pair.line, pair.value)
    return Board(
        npu_id=_kv_int(f, "npu id"),
        chip_id=_kv_int(f, "chip id"),
        product_name=_kv_str(f, "product name"),
        serial_number=_kv_str(f, "serial number"),
        firmware_version=_kv_str(f, "firmware version"),
        software_version=_kv_str(f, "software version"),
        pci_bus_id=bus.upper() if bus else None,
        chip_name=_kv_str(f, "chip name"),
        fields={p.key: p.value for p in f.values()},
    )


@dataclass(frozen=True, slots=True)
class ProcMem:
    pid: int
    name: str | None
    memory_mb: int | None
    line: int = 0


_PROC_MEM = re.compile(
    r"Process id\s*:\s*(\d{1,18})\s+Process name\s*:\s*(.*?)\s+Process memory\(MB\)\s*:\s*(\S+)"
)


def parse_proc_mem(text: str) -> tuple[int, tuple[ProcMem, ...]]:
    """`npu-smi info -t proc-mem -i N`: (NPU id, processes)."""
    npu_id: int | None = None
    procs: list[ProcMem] = []
    for no, line in _lines(text):
        m = _PROC_MEM.fullmatch(line)
        if m:
            memory = _int(m.group(3), "process memory", no, line)
            name = m.group(2).strip()
            procs.append(ProcMem(int(m.group(1)), name or None, memory, no))
            continue
        kv = _KV.fullmatch(line)
        if kv and norm_key(kv.group(1)) == "npu id":
            npu_id = _int(kv.group(2).strip(), "NPU ID", no, line, allow_na=False)
        elif kv and norm_key(kv.group(1)) in ("chip id", "chip count"):
            continue
        else:
            raise NpuSmiParseError("unknown `-t proc-mem` line", no, line)
    if npu_id is None:
        raise NpuSmiParseError("no 'NPU ID' in `-t proc-mem` output")
    return npu_id, tuple(procs)


@dataclass(frozen=True, slots=True)
class NpuEntry:
    npu_id: int
    chip_count: int | None
    product_name: str | None
    serial_number: str | None


@dataclass(frozen=True, slots=True)
class InfoL:
    """`npu-smi info -l`."""

    total_count: int | None
    npus: tuple[NpuEntry, ...]


def parse_info_l(text: str) -> InfoL:
    total: int | None = None
    npus: list[NpuEntry] = []
    current: dict[str, str] | None = None

    def flush() -> None:
        if current is not None:
            npus.append(
                NpuEntry(
                    npu_id=int(current["npu id"]),
                    chip_count=int(current["chip count"]) if "chip count" in current else None,
                    product_name=current.get("product name"),
                    serial_number=current.get("serial number"),
                )
            )

    for block in parse_kv(text):
        for pair in block:
            key = norm_key(pair.key)
            where = (pair.line, f"{pair.key} : {pair.value}")
            if key in ("total count", "card count"):
                total = _int(pair.value, pair.key, *where, allow_na=False)
            elif key == "npu id":
                flush()
                _int(pair.value, pair.key, *where, allow_na=False)
                current = {"npu id": pair.value}
            elif current is None:
                raise NpuSmiParseError("a field before the first 'NPU ID'", *where)
            elif key == "chip count":
                _int(pair.value, pair.key, *where, allow_na=False)
                current[key] = pair.value
            elif pair.value not in _NA and pair.value:
                current[key] = pair.value
    flush()
    if not npus:
        raise NpuSmiParseError("no 'NPU ID' in `-l` output")
    return InfoL(total, tuple(npus))


@dataclass(frozen=True, slots=True)
class ChipMap:
    """One row of `npu-smi info -m`."""

    npu_id: int
    chip_id: int
    logic_id: int | None  # None for "-" (an MCU) or where the column is absent
    phy_id: int | None
    slot_id: int | None
    name: str | None

    @property
    def is_mcu(self) -> bool:
        return (self.name or "").lower() == "mcu"


_M_COLUMNS = {"npu id", "chip id", "chip logic id", "chip phy-id", "slot id", "chip name"}


def parse_info_m(text: str) -> tuple[ChipMap, ...]:
    rows = _lines(text)
    if not rows:
        raise NpuSmiParseError("empty `-m` output")
    hno, head = rows[0]
    cols = [norm_key(c) for c in re.split(r"\s{2,}|\t", head)]
    if cols[:1] != ["npu id"] or "chip id" not in cols or cols[-1] != "chip name" or any(
        c not in _M_COLUMNS for c in cols
    ):
        raise NpuSmiParseError("unknown `-m` header", hno, head)
    out = []
    for no, line in rows[1:]:
        parts = re.split(r"\s+", line, maxsplit=len(cols) - 1)
        if len(parts) == len(cols) - 1:
            parts.append("")  # an empty chip name
        if len(parts) != len(cols):
            raise NpuSmiParseError(f"expected {len(cols)} columns", no, line)
        vals = dict(zip(cols, parts, strict=True))

        def num(key: str, vals: dict[str, str] = vals, no: int = no, line: str = line) -> int | None:
            v = vals.get(key)
            if v is None or v == "-":
                return None
            return _int(v, key, no, line)

        npu_id = num("npu id")
        chip_id = num("chip id")
        if npu_id is None or chip_id is None:
            raise NpuSmiParseError("NPU ID and Chip ID must be numbers", no, line)
        out.append(ChipMap(npu_id, chip_id, num("chip logic id"), num("chip phy-id"),
                           num("slot id"), vals["chip name"].strip() or None))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class WatchRow:
    npu_id: int
    chip_id: int | None
    values: dict[str, float | None]  # header (e.g. "Pwr(W)", "AI Core(%)") -> value


def parse_watch(text: str) -> tuple[WatchRow, ...]:
    """`npu-smi info watch`: a header, then one row per chip per refresh."""
    rows = _lines(text)
    if not rows:
        raise NpuSmiParseError("empty `watch` output")
    hno, head = rows[0]
    # Headers are "%-12s" wide, so "Ctrl Cpu(%)" touches the next one with a single space:
    # split on the closing parenthesis that ends every header instead.
    # (str.split, not a regex: a lazy pattern rescanned a 40 k-character header for 23 s.)
    *named, tail = head.split(")")
    cols = [c.strip() + ")" for c in named if c.count("(") == 1 and c.strip()[:1] not in "(" ]
    if tail.strip() or len(cols) != len(named):
        cols = []
    if not cols or cols[0] != "NpuID(Idx)" or "".join(cols).replace(" ", "") != "".join(
        head.split()
    ):
        raise NpuSmiParseError("unknown `watch` header", hno, head)
    with_chip = len(cols) > 1 and cols[1] == "ChipId(Idx)"
    metrics = cols[2:] if with_chip else cols[1:]
    out = []
    for no, line in rows[1:]:
        if line == head:
            continue  # npu-smi repeats the header now and then
        toks = line.split()
        if len(toks) != len(cols):
            raise NpuSmiParseError(f"expected {len(cols)} columns", no, line)
        npu_id = _int(toks[0], "NPU id", no, line, allow_na=False)
        chip_id = _int(toks[1], "chip id", no, line, allow_na=False) if with_chip else None
        vals = toks[2:] if with_chip else toks[1:]
        assert npu_id is not None
        out.append(WatchRow(npu_id, chip_id,
                            {m: _float(v, m, no, line) for m, v in zip(metrics, vals, strict=True)}))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Topology:
    """`npu-smi info -t topo`: link kinds between NPUs and each NPU's CPU affinity."""

    npus: tuple[str, ...]
    links: dict[tuple[str, str], str]
    cpu_affinity: dict[str, str]


_LINKS = {"X", "HCCS", "PIX", "PXB", "PHB", "SYS", "NA", "SIO", "HCCS_SW"}


def parse_topo(text: str) -> Topology:
    rows = _lines(text)
    if not rows:
        raise NpuSmiParseError("empty `-t topo` output")
    hno, head = rows[0]
    cols = re.split(r"\s{2,}", head)
    has_aff = cols[-1] == "CPU Affinity"
    npus = tuple(cols[:-1] if has_aff else cols)
    if not npus or not all(re.fullmatch(r"NPU\d{1,4}", n) for n in npus):
        raise NpuSmiParseError("unknown `-t topo` header", hno, head)
    links: dict[tuple[str, str], str] = {}
    affinity: dict[str, str] = {}
    seen = 0
    for no, line in rows[1:]:
        if line == "Legend:":
            break
        toks = line.split()
        if len(toks) != 1 + len(npus) + (1 if has_aff else 0) or toks[0] not in npus:
            raise NpuSmiParseError("unknown `-t topo` row", no, line)
        for other, kind in zip(npus, toks[1:1 + len(npus)], strict=True):
            if kind not in _LINKS:
                raise NpuSmiParseError(f"unknown link kind {kind!r}", no, line)
            links[(toks[0], other)] = kind
        if has_aff:
            affinity[toks[0]] = toks[-1]
        seen += 1
    if seen != len(npus):
        raise NpuSmiParseError(f"expected {len(npus)} rows in `-t topo` output")
    return Topology(npus, links, affinity)


@dataclass(frozen=True, slots=True)
class HelpInfo:
    """`npu-smi info -h`: which `-t` types and which options this npu-smi has."""

    types: frozenset[str]
    options: frozenset[str]


def parse_help(text: str) -> HelpInfo:
    rows = _lines(text)
    if not rows or not rows[0][1].startswith("Usage: npu-smi info"):
        raise NpuSmiParseError("not `npu-smi info -h` output", *(rows[0] if rows else (0, "")))
    types: set[str] = set()
    options: set[str] = set()
    in_types = False
    for _no, line in rows[1:]:
        if line.startswith("type:"):
            in_types = True
            line = line[len("type:"):]
        if in_types:
            types.update(t.strip().rstrip(".") for t in line.split(",") if t.strip())
            if line.rstrip().endswith("."):
                in_types = False
            continue
        m = re.match(r"(-[a-z])\s+%d", line)
        if m:
            options.add(m.group(1))
    if not types:
        raise NpuSmiParseError("no `-t` types in `npu-smi info -h` output")
    return HelpInfo(frozenset(types), frozenset(options))
