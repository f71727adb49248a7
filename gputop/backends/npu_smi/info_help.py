"""Parse `npu-smi info -h`: which `-t` types and options this npu-smi has."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gputop.backends.npu_smi.syntax import NpuSmiParseError, numbered_lines


@dataclass(frozen=True, slots=True)
class HelpInfo:
    """`npu-smi info -h`: which `-t` types and which options this npu-smi has."""

    types: frozenset[str]
    options: frozenset[str]


def parse_help(text: str) -> HelpInfo:
    rows = numbered_lines(text)
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
