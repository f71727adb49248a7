"""Reading an nvidia-smi CSV log (written by gputop or by nvidia-smi) back into cells.

Pure functions: text in, header fields and rows of raw cells out. Cells stay the exact strings of
the file, so that printing them again reproduces the file byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputop.errors import GputopError
from gputop.query.fields import QUERIES, Field

SEP = ", "
# Free-text columns that may themselves contain ", " (nvidia-smi does not quote).
_TEXT_FIELDS = ("name", "gpu_name", "process_name")


class LogFormatError(GputopError):
    """A CSV log that cannot be read; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class Column:
    title: str  # as the header spells it: "clocks.current.sm [MHz]"
    name: str  # without the unit tag
    field: Field | None  # None: a column this table does not know (carried as text)


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


def _query_for(names: list[str]) -> str | None:
    best, best_known = None, 0
    for query, fields in QUERIES.items():
        canonical = {f.name for f in fields}
        known = sum(n in canonical for n in names)
        if known == len(names):
            return query
        if known > best_known:
            best, best_known = query, known
    return best


def parse_header(line: str, where: str) -> tuple[str, tuple[Column, ...]]:
    titles = line.split(SEP)
    names = [_strip_unit(t) for t in titles]
    if not line.strip() or any(not n for n in names):
        raise LogFormatError(f"{where}:1: empty or malformed CSV header")
    query = _query_for(names)
    if query is None:
        raise LogFormatError(
            f"{where}:1: not an nvidia-smi CSV header (no known field in {line[:60]!r};"
            " was it written with --format=csv,noheader?)")
    by_name = {f.name: f for f in QUERIES[query]}
    return query, tuple(Column(t, n, by_name.get(n)) for t, n in zip(titles, names, strict=True))


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
            rows.append(Row(lineno, split_row(raw, columns, lineno, where)))
        except LogFormatError:
            if lineno == len(lines) and not complete:
                break  # a row cut short by a crash of the writer: not a row at all
            raise
    return Log(query, columns, tuple(rows))
