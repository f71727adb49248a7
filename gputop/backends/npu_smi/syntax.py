"""What every parser of npu-smi's text shares: the error it raises, numbered lines, whole
numbers and decimals where npu-smi may print ``NA``, and the words and bus ids it prints."""

from __future__ import annotations

import re

from gputop.backends.base import BackendError

HEALTH_STATES = ("OK", "Warning", "Alarm", "Critical", "UNKNOWN")  # npu_common.c, in this order
# a health word as npu-smi prints it (one of HEALTH_STATES, or a newer one)
HEALTH_WORD = re.compile(r"[A-Za-z]{1,20}")
INT = re.compile(r"-?\d{1,18}")
FLOAT = re.compile(r"-?\d{1,18}(?:\.\d{1,9})?")
BUS_ID = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]{1,2}")
NA_WORDS = ("NA", "N/A")


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


def numbered_lines(text: str) -> list[tuple[int, str]]:
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


def int_field(tok: str, what: str, no: int, line: str, allow_na: bool = True) -> int | None:
    """Read a whole number (None for ``NA`` where allowed); raise naming ``what`` and the line."""
    if allow_na and tok in NA_WORDS:
        return None
    if not INT.fullmatch(tok):
        raise NpuSmiParseError(f"{what} is not a whole number ({tok!r})", no, line)
    return int(tok)


def float_field(tok: str, what: str, no: int, line: str) -> float | None:
    """Read a decimal (None for ``NA`` or ``-``); raise naming ``what`` and the line."""
    if tok in NA_WORDS or tok == "-":
        return None
    if not FLOAT.fullmatch(tok):
        raise NpuSmiParseError(f"{what} is not a number ({tok!r})", no, line)
    return float(tok)
