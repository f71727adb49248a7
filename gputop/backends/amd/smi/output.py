"""Pure readers of `amd-smi … --json` output: the document, its values, its error strings.

amd-smi has printed its JSON in two shapes: a bare list with one object per GPU (`process --json`
of amd-smi 26.2.1, the metric JSON of the releases before 26) and ``{"gpu_data": [...]}``
(`static` and `metric` of amd-smi 26). A value is a ``{"value": 750, "unit": "W"}`` pair, a plain
number, a string with its unit ("132MHz", as `static` prints current clocks), ``"N/A"``, or the
library's error as a string ("AMDSMI_STATUS_FILE_ERROR - Error opening file", printed when the user
may not open the card's files: not in the render and video groups). Lines of text may come before
the JSON (a warning on the groups the user lacks, a Python warning of the tool's own code): they
are skipped and kept for a note.

amd-smi's "KB", "MB" and "GB" are binary: its `metric` source divides bytes by 1024 * 1024 to
print "MB", a 192 GiB MI300X prints 196592 MB, and the default table of the same R9700 processes
prints the 56000 B of `process --json` as "54.7 KB".
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gputop.backends.base import BackendError
from gputop.core import untrusted
from gputop.core.units import MIB

NA = "N/A"
STATUS_PREFIX = "AMDSMI_STATUS_"
MAX_BANNER_LINES = 8  # lines of text before the JSON kept for a note; the rest are dropped

# Each dimension's canonical unit and how many of it one of each unit amd-smi prints is (the
# units of its source and of the captures; a unit not listed makes the value None, not a guess).
WATTS = {"W": 1.0}
MHZ = {"MHz": 1.0}
CELSIUS = {"C": 1.0, "\N{DEGREE SIGN}C": 1.0}
PERCENT = {"%": 1.0}
NANOSECONDS = {"ns": 1.0}
GT_S = {"GT/s": 1.0}
JOULES = {"J": 1.0}
MEBIBYTES = {"B": 1 / MIB, "KB": 1 / 1024, "MB": 1.0, "GB": 1024.0}

# "132MHz", "132 MHz", "32 GT/s": a number, then its unit
_WITH_UNIT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([^\s\d].*?)\s*$")


class AmdSmiParseError(BackendError):
    """amd-smi printed what is not the JSON asked for (cut off, not JSON, another shape)."""


@dataclass(frozen=True)
class Output:
    """One `amd-smi … --json` answer: one object per GPU, and the text lines before the JSON."""

    gpus: tuple[dict[str, Any], ...]
    banner: tuple[str, ...]


def load(text: str, command: str) -> Output:
    """Read the answer to ``amd-smi COMMAND --json``: skip the lines of text before the first
    line that starts with ``[`` or ``{``, then take one document, bare list or
    ``{"gpu_data": [...]}``. Raise AmdSmiParseError, naming the command, on anything else (an
    output cut off included)."""
    what = f"`amd-smi {command} --json`"
    doc, banner = document(text, what, AmdSmiParseError)
    return Output(_gpus(doc, what), banner)


def document(text: str, what: str, error: type[BackendError]) -> tuple[Any, tuple[str, ...]]:
    """The JSON document a tool printed after its lines of text (``what`` names the call), and
    those lines (at most ``MAX_BANNER_LINES``). ROCm's two tools print the same way: amd-smi its
    warning on the groups, rocm-smi an empty line. Raise ``error`` where there is no JSON, or
    not a whole document."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.lstrip()[:1] in ("[", "{")), None)
    if start is None:
        first = _first(lines)
        raise error(f"{what} printed no JSON" + (f": {first}" if first else ""))
    doc = _document("".join(lines[start:]), what, len(lines), error)
    banner = tuple(untrusted.printable(line.strip(), 200)
                   for line in lines[:start] if line.strip())
    return doc, banner[:MAX_BANNER_LINES]


def _document(body: str, what: str, last_line: int, error: type[BackendError]) -> Any:
    try:
        return untrusted.loads(body)
    except RecursionError:
        raise error(f"{what}: its JSON is nested too deep") from None
    except ValueError as exc:
        if getattr(exc, "pos", -1) >= len(body.rstrip()):
            raise error(f"{what}: its JSON stops at line {last_line}, before the "
                        "document ends (the output was cut off)") from None
        raise error(f"{what}: not JSON: {getattr(exc, 'msg', exc)}") from None


def _gpus(doc: Any, what: str) -> tuple[dict[str, Any], ...]:
    if isinstance(doc, dict) and "gpu_data" in doc:
        doc = doc["gpu_data"]
    if not isinstance(doc, list) or not all(isinstance(g, dict) for g in doc):
        raise AmdSmiParseError(f"{what}: expected a list of GPUs, or {{\"gpu_data\": [...]}}")
    if len(doc) > untrusted.MAX_DEVICES:
        raise AmdSmiParseError(f"{what}: more than {untrusted.MAX_DEVICES} GPUs")
    return tuple(doc)


def _first(lines: list[str]) -> str:
    return next((untrusted.printable(line.strip(), 200) for line in lines if line.strip()), "")


def dig(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]…``; None where a step is missing or not an object."""
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def quantity(value: Any, units: Mapping[str, float]) -> float | None:
    """A reading in the canonical unit of ``units`` (the one worth 1.0): from a ``{"value",
    "unit"}`` pair, a plain number, or a number-and-unit string. None for "N/A", an error
    string, a unit of another dimension, or what is not a finite number."""
    if isinstance(value, Mapping):
        number, unit = value.get("value"), value.get("unit")
        if not isinstance(unit, str):
            return None
    elif isinstance(value, str):
        m = _WITH_UNIT.match(value)
        if m is None:
            return None
        number, unit = untrusted.parse_float(m.group(1)), m.group(2)
    else:
        number, unit = value, None
    scale = 1.0 if unit is None else units.get(unit)
    if scale is None or number is None or not untrusted.number_ok(number):
        return None
    return float(number * scale)


def integer(value: Any) -> int | None:
    """A count or an id: a plain integer or a ``{"value": n}`` pair; None otherwise."""
    if isinstance(value, Mapping):
        value = value.get("value")
    return value if type(value) is int and untrusted.number_ok(value) else None


def hex_id(value: Any) -> int | None:
    """A PCI id as amd-smi prints it ("0x74a1"); None otherwise."""
    if not isinstance(value, str) or not value.lower().startswith("0x"):
        return None
    return untrusted.parse_int(value, 16)


def text(value: Any) -> str | None:
    """A printable string; None for "N/A", an error string or what is not a string."""
    if not isinstance(value, str) or not value.strip() or value.strip() == NA:
        return None
    if value.startswith(STATUS_PREFIX):
        return None
    return untrusted.printable(value.strip(), 200)


def status_errors(obj: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Each ``(key path, message)`` where amd-smi printed its library's error instead of a
    value ("amdgpu_version", "AMDSMI_STATUS_FILE_ERROR - Error opening file")."""
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from status_errors(value, f"{path}.{key}" if path else str(key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from status_errors(value, f"{path}[{i}]")
    elif isinstance(obj, str) and obj.startswith(STATUS_PREFIX):
        yield path, untrusted.printable(obj, 200)


STATUS_NOTE = ("amd-smi printed its library's error for {count} value(s), e.g. {path}: {message} "
               "(a user outside the render and video groups cannot open the GPUs' files)")


class Notes:
    """What to tell the user once of the answers read: the text lines amd-smi printed before its
    JSON, and the values it printed as its library's error (each key path counted once)."""

    def __init__(self) -> None:
        self._banner: dict[str, None] = {}  # an ordered set
        self._status: dict[str, str] = {}  # key path -> the error printed there

    def add(self, command: str, found: Output) -> None:
        for line in found.banner:
            if len(self._banner) < MAX_BANNER_LINES:
                self._banner[line] = None
        for gpu in found.gpus:
            index = gpu.get("gpu")
            where = f"{command} gpu {index}" if type(index) is int else command
            for path, message in status_errors(gpu):
                self._status.setdefault(f"{where}: {path}", message)

    def lines(self) -> tuple[str, ...]:
        out = [f"amd-smi printed before its JSON: {line}" for line in self._banner]
        if self._status:
            path, message = next(iter(self._status.items()))
            out.append(STATUS_NOTE.format(count=len(self._status), path=path, message=message))
        return tuple(out)
