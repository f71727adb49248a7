"""Parse `npu-smi info -t topo`: the link kinds between NPUs and each NPU's CPU affinity."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gputop.backends.npu_smi.syntax import NpuSmiParseError, numbered_lines


@dataclass(frozen=True, slots=True)
class Topology:
    """`npu-smi info -t topo`: link kinds between NPUs and each NPU's CPU affinity."""

    npus: tuple[str, ...]
    links: dict[tuple[str, str], str]
    cpu_affinity: dict[str, str]


_LINKS = {"X", "HCCS", "PIX", "PXB", "PHB", "SYS", "NA", "SIO", "HCCS_SW"}


def parse_topo(text: str) -> Topology:
    rows = numbered_lines(text)
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
