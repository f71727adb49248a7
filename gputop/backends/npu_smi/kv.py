"""Parse npu-smi's ``Key : value`` outputs (the `-t` queries, `-l`), and pick one chip's fields
from a `-t` query's blocks."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gputop.backends.npu_smi.syntax import INT, NA_WORDS, NpuSmiParseError, float_field, int_field


@dataclass(frozen=True, slots=True)
class KvPair:
    key: str
    value: str
    line: int


KV_LINE = re.compile(r"([^:]+?)\s*:\s*(.*)")


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
        m = KV_LINE.fullmatch(line)
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


def chip_fields(text: str, chip_id: int | None = None) -> dict[str, KvPair]:
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
        if chip_id is None or (INT.fullmatch(cid) and int(cid) == chip_id):
            chosen = d
            break
    if chosen is None and chip_blocks:
        chosen = chip_blocks[0]
    for k, v in (chosen or {}).items():
        fields.setdefault(k, v)
    if "npu id" not in fields:
        raise NpuSmiParseError("no 'NPU ID' in the output")
    return fields


def kv_int(fields: dict[str, KvPair], key: str) -> int | None:
    """Read ``key`` of a chip's fields as a whole number (None where absent or NA)."""
    pair = fields.get(key)
    if pair is None:
        return None
    return int_field(pair.value, pair.key, pair.line, f"{pair.key} : {pair.value}")


def kv_float(fields: dict[str, KvPair], key: str) -> float | None:
    """Read ``key`` of a chip's fields as a decimal (None where absent or NA)."""
    pair = fields.get(key)
    if pair is None:
        return None
    return float_field(pair.value, pair.key, pair.line, f"{pair.key} : {pair.value}")


def kv_str(fields: dict[str, KvPair], key: str) -> str | None:
    """Read ``key`` of a chip's fields as text (None where absent, empty or NA)."""
    pair = fields.get(key)
    if pair is None or pair.value in NA_WORDS or not pair.value:
        return None
    return pair.value
