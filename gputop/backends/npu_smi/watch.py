"""Parse `npu-smi info watch`: a header, then one row of readings per chip per refresh."""

from __future__ import annotations

from dataclasses import dataclass

from gputop.backends.npu_smi.syntax import NpuSmiParseError, float_field, int_field, numbered_lines


@dataclass(frozen=True, slots=True)
class WatchRow:
    npu_id: int
    chip_id: int | None
    values: dict[str, float | None]  # header (e.g. "Pwr(W)", "AI Core(%)") -> value


def parse_watch(text: str) -> tuple[WatchRow, ...]:
    """`npu-smi info watch`: a header, then one row per chip per refresh."""
    rows = numbered_lines(text)
    if not rows:
        raise NpuSmiParseError("empty `watch` output")
    hno, head = rows[0]
    # Headers are "%-12s" wide, so "Ctrl Cpu(%)" touches the next one with a single space:
    # split on the closing parenthesis that ends every header instead.
    # (str.split, not a regex: a lazy pattern rescanned a 40 k-character header for 23 s.)
    *named, tail = head.split(")")
    cols = [c.strip() + ")" for c in named if c.count("(") == 1 and c.strip()[:1] not in "(" ]
    if tail.strip() or len(cols) != len(named):
        cols = []
    if not cols or cols[0] != "NpuID(Idx)" or "".join(cols).replace(" ", "") != "".join(
        head.split()
    ):
        raise NpuSmiParseError("unknown `watch` header", hno, head)
    with_chip = len(cols) > 1 and cols[1] == "ChipId(Idx)"
    metrics = cols[2:] if with_chip else cols[1:]
    out = []
    for no, line in rows[1:]:
        if line == head:
            continue  # npu-smi repeats the header now and then
        toks = line.split()
        if len(toks) != len(cols):
            raise NpuSmiParseError(f"expected {len(cols)} columns", no, line)
        npu_id = int_field(toks[0], "NPU id", no, line, allow_na=False)
        chip_id = int_field(toks[1], "chip id", no, line, allow_na=False) if with_chip else None
        vals = toks[2:] if with_chip else toks[1:]
        assert npu_id is not None
        out.append(WatchRow(npu_id, chip_id,
                            {m: float_field(v, m, no, line) for m, v in zip(metrics, vals, strict=True)}))
    return tuple(out)
