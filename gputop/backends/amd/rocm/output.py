"""Pure readers of `rocm-smi … --json`: the document, its cards, and the forms of its values.

rocm-smi prints one object: ``"card0"``, ``"card1"``, … (one per GPU, keyed by the kernel's DRM
card number) and ``"system"`` (the driver version, the PIDs, the topology). Every value is a
string: a number ("36.0"), a clock in parentheses ("(1725Mhz)"), a PCIe level ("1 (16.0GT/s
x16)"), a byte count, or ``"N/A"``. An empty line (or, with warnings, lines of text) may come
before the JSON: skipped, and kept for a note, as amd-smi's are (the same reader,
gputop.backends.amd.smi.output.document).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gputop.backends.amd.smi.output import MAX_BANNER_LINES, NA, document
from gputop.backends.base import BackendError
from gputop.core import untrusted

SYSTEM = "system"
_CARD = re.compile(r"^card(\d{1,4})$")
# "(1725Mhz)" as `-c` prints a current clock; rocm-smi spells the unit "Mhz"
_CLOCK = re.compile(r"^\(\s*(\d+(?:\.\d+)?)\s*[Mm][Hh]z\s*\)$")
# "1 (16.0GT/s x16)": the current PCIe DPM level, its transfer rate and its width
_PCIE_LEVEL = re.compile(r"^\s*\d+\s*\(\s*(\d+(?:\.\d+)?)\s*GT/s\s+x(\d{1,2})\s*\)\s*$")


class RocmSmiParseError(BackendError):
    """rocm-smi printed what is not the JSON asked for (cut off, not JSON, another shape)."""


@dataclass(frozen=True)
class Output:
    """One `rocm-smi … --json` answer: each card's object by its card number, the "system"
    object, and the text lines before the JSON."""

    cards: dict[int, Mapping[str, Any]]
    system: Mapping[str, Any]
    banner: tuple[str, ...]


def load(text: str, what: str) -> Output:
    """Read an answer of rocm-smi (``what`` names the call in errors). Raise RocmSmiParseError
    where it is not one JSON object, or an output cut off."""
    doc, banner = document(text, what, RocmSmiParseError)
    if not isinstance(doc, dict):
        raise RocmSmiParseError(f"{what}: expected an object of cards, not a "
                                f"{type(doc).__name__}")
    cards: dict[int, Mapping[str, Any]] = {}
    for key, value in doc.items():
        m = _CARD.match(key) if isinstance(key, str) else None
        if m is not None and isinstance(value, Mapping):
            cards[int(m.group(1))] = value
    if len(cards) > untrusted.MAX_DEVICES:
        raise RocmSmiParseError(f"{what}: more than {untrusted.MAX_DEVICES} cards")
    system = doc.get(SYSTEM)
    return Output(dict(sorted(cards.items())), system if isinstance(system, Mapping) else {},
                  banner)


def first(card: Mapping[str, Any], *keys: str) -> str | None:
    """The value of the first of ``keys`` the card holds that is not "N/A" (the keys one
    figure has had across ROCm releases)."""
    for key in keys:
        found = text(card.get(key))
        if found is not None:
            return found
    return None


def text(value: Any) -> str | None:
    """A printable string; None for "N/A", an empty string or what is not a string."""
    if not isinstance(value, str) or not value.strip() or value.strip() == NA:
        return None
    return untrusted.printable(value.strip(), 200)


def number(value: str | None) -> float | None:
    """A decimal reading ("36.0", "0"); None where it is not one."""
    return untrusted.parse_float(value) if value is not None else None


def count(value: str | None) -> int | None:
    """A whole count or byte count ("34342961152"); None where it is not one."""
    return untrusted.parse_int(value) if value is not None else None


def hex_id(value: str | None) -> int | None:
    """A PCI id as rocm-smi prints it ("0x738c"); None where it is not one (4.3.0 prints the
    vendor id, "0x1002", where later releases print names, so a name is checked with this)."""
    if value is None or not value.lower().startswith("0x"):
        return None
    return untrusted.parse_int(value, 16)


def clock_mhz(value: str | None) -> float | None:
    """A current clock as ``-c`` prints it: "(1725Mhz)" → 1725.0."""
    m = _CLOCK.match(value or "")
    return untrusted.parse_float(m.group(1)) if m else None


@dataclass(frozen=True)
class PcieLevel:
    gts: float  # the transfer rate, GT/s
    width: int  # lanes


def pcie_level(value: str | None) -> PcieLevel | None:
    """The link of the current PCIe DPM level: "1 (16.0GT/s x16)" → 16.0 GT/s, 16 lanes."""
    m = _PCIE_LEVEL.match(value or "")
    if m is None:
        return None
    gts = untrusted.parse_float(m.group(1))
    return PcieLevel(gts, int(m.group(2))) if gts is not None else None


class Notes:
    """What to tell the user once of the answers read: the text lines rocm-smi printed before
    its JSON."""

    def __init__(self) -> None:
        self._banner: dict[str, None] = {}  # an ordered set

    def add(self, found: Output) -> None:
        for line in found.banner:
            if len(self._banner) < MAX_BANNER_LINES:
                self._banner.setdefault(line, None)

    def lines(self) -> tuple[str, ...]:
        return tuple(f"rocm-smi printed before its JSON: {line}" for line in self._banner)
