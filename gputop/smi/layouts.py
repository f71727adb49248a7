"""The `-q` and `-q -x` layouts of the driver generations gputop has real captures of.

Each file in gputop/data/nvidia-smi/ is a real capture, unmodified (sources in its SOURCES.md);
a layout is the first capture of a version, with its lists' forms taken from the captures of
the same version and, where none shows a form, from the default generation's. A node claims the
layout of the driver nearest its own; a node with no NVIDIA driver claims the default: the
generation whose four faces gputop has from one real machine.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

from gputop.core.datafiles import DATA
from gputop.formats import smi_doc

DEFAULT = "580.159.04"  # table, -L, -q and -q -x captured on one H200 (tests/fixtures)
_NAME = re.compile(r"^(qx?)_(\d+(?:\.\d+)+)(?:_[\w-]+)?\.(?:txt|xml)$")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


@cache
def _catalog() -> dict[tuple[bool, str], tuple[str, ...]]:
    """(XML?, version) -> the names of its capture files, sorted."""
    out: dict[tuple[bool, str], list[str]] = {}
    for entry in (DATA / "nvidia-smi").iterdir():
        m = _NAME.match(entry.name)
        if m:
            out.setdefault((m.group(1) == "qx", m.group(2)), []).append(entry.name)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def generation(driver: str | None, vendors: Sequence[str | None]) -> str:
    """The driver version a node's answers are in: its own NVIDIA driver's, else the default
    generation's (an Ascend driver's "25.0.rc1" is no nvidia-smi generation)."""
    nvidia = bool(vendors) and all(v in (None, "nvidia") for v in vendors)
    return (driver or DEFAULT) if nvidia else DEFAULT


def versions(xml: bool) -> list[str]:
    return sorted((v for x, v in _catalog() if x == xml), key=_version)


def claim(driver: str | None, xml: bool) -> str:
    """The layout version a node with ``driver`` answers in: the nearest driver gputop has a
    layout of (the older of two as near), the default for a version that is none of NVIDIA's."""
    have = versions(xml)
    want = _version(driver or "")
    if not want or want[0] < 300:  # no NVIDIA driver: an Ascend "25.0.rc1", nothing at all
        return DEFAULT if DEFAULT in have else have[-1]
    return min(have, key=lambda v: (abs(_version(v)[0] - want[0]), _version(v)[0] > want[0],
                                    abs(_version(v)[1] - want[1]) if len(want) > 1 else 0))


@cache
def _docs(xml: bool, version: str) -> tuple[smi_doc.Document, ...]:
    folder = DATA / "nvidia-smi"
    return tuple(smi_doc.parse(folder.joinpath(name).read_text("utf-8"))
                 for name in _catalog()[(xml, version)])


def layout(xml: bool, version: str) -> smi_doc.Layout:
    """A fresh layout (rendering never changes it, but a caller may)."""
    fallbacks = [d for v in [DEFAULT, *versions(xml)] if v != version for d in _docs(xml, v)]
    return smi_doc.layout(_docs(xml, version), fallbacks)


__all__ = ["DEFAULT", "claim", "layout", "versions"]
