"""Reading an nvidia-smi CSV log (written by gputop or by nvidia-smi) back into cells.

Pure functions: text in, header fields and rows of raw cells out. Cells stay the exact strings of
the file, so that printing them again reproduces the file byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gputop.core.errors import GputopError
from gputop.core.model import Device, Process
from gputop.core.untrusted import printable
from gputop.formats.query_fields import QUERIES, Field, InvalidField, lookup

SEP = ", "
# Free-text columns that may themselves contain ", " (nvidia-smi does not quote).
_TEXT_FIELDS = ("name", "gpu_name", "process_name")


class LogFormatError(GputopError):
    """A CSV log that cannot be read; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class LoggedDevice(Device):
    """A device read from a log: the model's values plus the log's cells, by field name, so
    that query mode prints a replayed log's own cells back unchanged."""

    cells: Mapping[str, str] | None = None
    accounted: tuple[Mapping[str, str], ...] = ()  # --query-accounted-apps rows of this GPU


@dataclass(frozen=True, slots=True)
class LoggedProcess(Process):
    """A compute app read from a log, with the log's cells (see :class:`LoggedDevice`)."""

    cells: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Column:
    title: str  # as the header spells it: "clocks.current.sm [MHz]"
    name: str  # the field's canonical name (the header may spell an alias)
    field: Field


@dataclass(frozen=True, slots=True)
class Row:
    line: int  # 1-based line number in the file
    cells: dict[str, str]  # column name -> the cell exactly as written


@dataclass(frozen=True, slots=True)
class Log:
    query: str  # "gpu" | "compute-apps" | "accounted-apps"
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


def _strip_unit(title: str) -> str:
    if title.endswith("]") and " [" in title:
        return title[: title.rindex(" [")]
    return title


def _resolves(name: str, query: str) -> bool:
    try:
        lookup(name, query)
    except InvalidField:
        return False
    return True


def _query_for(names: list[str]) -> str | None:
    """The query whose fields (by name or alias) the header names most of; a tie goes to the
    one whose canonical names it uses (``gpu_name`` is a --query-gpu alias, but a column of
    --query-compute-apps). None where no name is a field at all."""
    def score(query: str) -> tuple[int, int]:
        canonical = {f.name for f in QUERIES[query]}
        return sum(_resolves(n, query) for n in names), sum(n in canonical for n in names)

    best = max(QUERIES, key=score)
    return best if score(best)[0] else None


def parse_header(line: str, where: str) -> tuple[str, tuple[Column, ...]]:
    """The query a log's header was written by and its columns, each a field of that query
    named once: nvidia-smi writes nothing else, so a column it could not have written (an
    unknown name, a field twice, a NUL, bytes that are not UTF-8) is one error naming it."""
    line = line.removeprefix("\ufeff")  # a byte-order mark that a Windows editor adds
    if "\x00" in line:
        raise LogFormatError(f"{where}:1: the header holds a NUL byte: not an nvidia-smi CSV log")
    try:
        line.encode("utf-8")
    except UnicodeEncodeError as exc:  # read with surrogateescape: the byte is in the surrogate
        raise LogFormatError(f"{where}:1: the header is not UTF-8 text (byte "
                             f"0x{ord(line[exc.start]) - 0xDC00:02x})") from None
    titles = line.split(SEP)
    names = [_strip_unit(t) for t in titles]
    if not line.strip() or any(not n for n in names):
        raise LogFormatError(f"{where}:1: empty or malformed CSV header")
    query = _query_for(names)
    if query is None:
        raise LogFormatError(
            f"{where}:1: not an nvidia-smi CSV header (no known field in "
            f"{printable(line[:60])!r}; was it written with --format=csv,noheader?)")
    columns: list[Column] = []
    seen: dict[str, int] = {}
    for number, (title, name) in enumerate(zip(titles, names, strict=True), 1):
        try:
            field = lookup(name, query)
        except InvalidField:
            raise LogFormatError(f"{where}:1: column {number}, {printable(name, 60)!r}, is not a "
                                 f"--query-{query} field") from None
        if field.name in seen:
            raise LogFormatError(f"{where}:1: column {number}, {printable(name, 60)!r}, repeats "
                                 f"column {seen[field.name]} ({field.name}): a log names each "
                                 "field once") from None
        seen[field.name] = number
        columns.append(Column(title, field.name, field))
    return query, tuple(columns)


def split_row(text: str, columns: tuple[Column, ...], lineno: int, where: str) -> dict[str, str]:
    cells = text.split(SEP)
    extra = len(cells) - len(columns)
    if extra > 0:
        # One free-text column holding ", " (a process or product name): give it the surplus.
        text_cols = [i for i, c in enumerate(columns) if c.name in _TEXT_FIELDS]
        if len(text_cols) == 1:
            i = text_cols[0]
            cells[i: i + extra + 1] = [SEP.join(cells[i: i + extra + 1])]
    if len(cells) != len(columns):
        raise LogFormatError(
            f"{where}:{lineno}: expected {len(columns)} cells as in the header, found {len(cells)}")
    return {c.name: cell for c, cell in zip(columns, cells, strict=True)}


def parse_log(text: str, where: str = "<log>") -> Log:
    """Parse a whole log. Blank lines are skipped; a partial last line (no newline) is kept."""
    lines = text.split("\n")
    complete = bool(lines) and lines[-1] == ""
    if complete:
        lines.pop()
    if not lines:
        raise LogFormatError(f"{where}: empty file, expected a CSV header")
    query, columns = parse_header(lines[0].rstrip("\r"), where)
    rows = []
    for lineno, raw in enumerate(lines[1:], start=2):
        raw = raw.rstrip("\r")
        if not raw.strip():
            continue
        try:
            if "\x00" in raw:  # nvidia-smi writes C strings: a NUL is no part of any cell
                raise LogFormatError(f"{where}:{lineno}: holds a NUL byte: not a log row")
            rows.append(Row(lineno, split_row(raw, columns, lineno, where)))
        except LogFormatError:
            if lineno == len(lines) and not complete:
                break  # a row cut short by a crash of the writer (zeros, half a row): no row
            raise
    return Log(query, columns, tuple(rows))
