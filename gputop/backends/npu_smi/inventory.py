"""Parse npu-smi's inventories: `npu-smi info -l` (the NPUs) and `npu-smi info -m` (each chip's
ids)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gputop.backends.npu_smi.kv import norm_key, parse_kv
from gputop.backends.npu_smi.syntax import NA_WORDS, NpuSmiParseError, int_field, numbered_lines


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
                total = int_field(pair.value, pair.key, *where, allow_na=False)
            elif key == "npu id":
                flush()
                int_field(pair.value, pair.key, *where, allow_na=False)
                current = {"npu id": pair.value}
            elif current is None:
                raise NpuSmiParseError("a field before the first 'NPU ID'", *where)
            elif key == "chip count":
                int_field(pair.value, pair.key, *where, allow_na=False)
                current[key] = pair.value
            elif pair.value not in NA_WORDS and pair.value:
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
    rows = numbered_lines(text)
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
            return int_field(v, key, no, line)

        npu_id = num("npu id")
        chip_id = num("chip id")
        if npu_id is None or chip_id is None:
            raise NpuSmiParseError("NPU ID and Chip ID must be numbers", no, line)
        out.append(ChipMap(npu_id, chip_id, num("chip logic id"), num("chip phy-id"),
                           num("slot id"), vals["chip name"].strip() or None))
    return tuple(out)
