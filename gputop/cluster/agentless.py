"""Agentless nodes: nvidia-smi's CSV stream or npu-smi's text, parsed into the same model.

Both parsers are pure: they take the remote's lines (already size-capped, untrusted) and return
snapshots. Values a tool does not report (``[N/A]``, ``[Not Supported]``…) become ``None``.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from gputop.cluster import states
from gputop.cluster.lines import Oversize
from gputop.cluster.protocol import Problem
from gputop.core import clock_events
from gputop.core.model import Device, Hint, Snapshot
from gputop.core.units import MIB
from gputop.core.untrusted import parse_float, parse_int, printable
from gputop.formats import query_fields

MAX_GPUS = 1024
_DEVICE_FIELDS = frozenset(f.name for f in fields(Device))
_MASK_FIELD = "clocks_event_reasons.active"

ColumnParser = Callable[[str], Any]


def canonical(field: str) -> str:
    """A header cell ("memory.total [MiB]") or a requested name (an alias) -> canonical name,
    by the query mode's nvidia-smi field table."""
    name = field.strip().split(" [", 1)[0].strip()
    try:
        return query_fields.lookup(name).name
    except query_fields.InvalidField:  # a column this viewer does not know: ignored
        return name


def column_parser(name: str) -> tuple[str, ColumnParser] | None:
    """(Device attribute, cell parser) for a canonical column name; None: not in the model."""
    if name == _MASK_FIELD:
        return "clock_event_mask", lambda text: parse_value(text, "mask")
    try:
        field = query_fields.lookup(name)
    except query_fields.InvalidField:
        return None
    if field.attr is None or field.attr not in _DEVICE_FIELDS:
        return None

    def parse(text: str) -> Any:
        value = query_fields.parse_value(field, text)
        return printable(value, 256) if isinstance(value, str) else value

    return field.attr, parse


def parse_value(text: str, kind: str) -> Any:
    """One CSV cell of the grouping columns (count, driver_version, the event mask). ``[N/A]``-style cells are None; a trailing unit ("81559
    MiB") is dropped, so captures taken without ``nounits`` parse the same."""
    text = text.strip()
    if not text or (text.startswith("[") and text.endswith("]")) or text in ("N/A", "Unknown Error"):
        return None
    if kind == "str":
        return printable(text, 256)
    if kind == "mask":
        return parse_int(text, 16)
    value = parse_float(text.split(" ", 1)[0])
    if value is None:
        return None
    if kind == "int":
        return int(value) if value.is_integer() else None
    return int(value) if value.is_integer() else value


@dataclass
class _Row:
    group: str | None  # the timestamp (rows of one -l iteration share it)
    count: int | None
    device: Device
    driver: str | None


class NvidiaSmiStream:
    """Rows of `nvidia-smi --query-gpu=… --format=csv[,noheader][,nounits] -l N` -> snapshots.

    Columns are mapped by the header when one comes (a capture, or a tool that prints it), else by
    the requested order. Rows are grouped by timestamp; a group is complete when ``count`` rows
    arrived, or when the next group starts.
    """

    def __init__(self, host: str, fields: tuple[str, ...],
                 clock: Callable[[], float] = time.time) -> None:
        self.host = host
        self.columns = [canonical(f) for f in fields]
        self.clock = clock
        self._pending: list[_Row] = []
        self._parsers_for: list[str] | None = None
        self._column_parsers: list[tuple[str, ColumnParser] | None] = []

    def feed(self, line: bytes | Oversize) -> list[Snapshot | Problem]:
        if isinstance(line, Oversize):
            return [Problem(states.PROTOCOL_ERROR,
                            f"discarded an oversized nvidia-smi line ({line.size:,} bytes)", False)]
        try:
            text = line.decode("utf-8", "replace").strip()
        except Exception:  # noqa: BLE001 - never let one line kill the node
            return []
        if not text:
            return []
        cells = next(csv.reader([text], skipinitialspace=True))
        if self._is_header(cells):
            self.columns = [canonical(c) for c in cells]
            return []
        if len(cells) != len(self.columns):
            return [Problem(states.PROTOCOL_ERROR, "nvidia-smi row has "
                            f"{len(cells)} columns, expected {len(self.columns)}: "
                            f"{printable(text, 120)}", False)]
        row = self._row(dict(zip(self.columns, cells, strict=True)))
        if row is None:
            return [Problem(states.PROTOCOL_ERROR,
                            f"nvidia-smi row without a GPU index: {printable(text, 120)}", False)]
        out: list[Snapshot | Problem] = []
        if self._pending and (row.group != self._pending[0].group or
                              any(r.device.index == row.device.index for r in self._pending)):
            out.append(self._flush())
        self._pending.append(row)
        if row.count is not None and len(self._pending) >= row.count or \
                len(self._pending) >= MAX_GPUS:
            out.append(self._flush())
        return out

    def _is_header(self, cells: list[str]) -> bool:
        first = canonical(cells[0]) if cells else ""
        return first in ("timestamp", "count", "driver_version", "index", "name", "uuid") or \
            any("[" in c and c.strip().endswith("]") and " [" in c for c in cells)

    def _parsers(self) -> list[tuple[str, ColumnParser] | None]:
        if self._parsers_for is not self.columns:
            self._parsers_for = self.columns
            self._column_parsers = [column_parser(c) for c in self.columns]
        return self._column_parsers

    def _row(self, values: dict[str, str]) -> _Row | None:
        kwargs: dict[str, Any] = {}
        for parser, text in zip(self._parsers(), values.values(), strict=True):
            if parser is not None:
                kwargs[parser[0]] = parser[1](text)
        if kwargs.get("index") is None:
            return None
        mask = kwargs.get("clock_event_mask")
        if mask is not None:
            kwargs["clock_event_reasons"] = clock_events.decode(mask)
        kwargs["vendor"] = "nvidia"
        count = parse_value(values.get("count", ""), "int")
        driver = parse_value(values.get("driver_version", ""), "str")
        return _Row(values.get("timestamp"), count, Device(**kwargs), driver)

    def flush(self) -> list[Snapshot]:
        """Release rows still waiting for their group to complete (the stream went quiet)."""
        return [self._flush()] if self._pending else []

    def _flush(self) -> Snapshot:
        rows, self._pending = self._pending, []
        devices = tuple(sorted((r.device for r in rows), key=lambda d: d.index))
        return Snapshot(host=self.host, time=self.clock(), backend="nvidia-smi",
                        devices=devices, driver_version=rows[0].driver)


NpuParse = Callable[[str], "tuple[tuple[Device, ...], str | None, tuple[Hint, ...]]"]


class NpuSmiStream:
    """`npu-smi info` outputs separated by an end marker -> snapshots, via the npu-smi parsers."""

    def __init__(self, host: str, end_marker: str, parse: NpuParse | None = None,
                 clock: Callable[[], float] = time.time, max_block: int = 4 * MIB) -> None:
        self.host = host
        self.end = end_marker.encode()
        self.parse = parse or parse_npu_smi_info
        self.clock = clock
        self.max_block = max_block
        self._lines: list[bytes] = []
        self._size = 0
        self._overflow = False

    def feed(self, line: bytes | Oversize) -> list[Snapshot | Problem]:
        if isinstance(line, Oversize):
            self._overflow = True
            return []
        if line.strip() != self.end:
            self._size += len(line) + 1
            if self._size > self.max_block:
                self._overflow = True
            else:
                self._lines.append(line)
            return []
        lines, self._lines, self._size = self._lines, [], 0
        if self._overflow:
            self._overflow = False
            return [Problem(states.PROTOCOL_ERROR, "npu-smi output over the size cap", False)]
        text = b"\n".join(lines).decode("utf-8", "replace")
        try:
            devices, driver, hints = self.parse(text)
        except Exception as exc:  # noqa: BLE001 - a parser failure marks the node, never kills it
            return [Problem(states.PROTOCOL_ERROR,
                            f"cannot parse npu-smi output: {printable(str(exc), 160)}", False)]
        return [Snapshot(host=self.host, time=self.clock(), backend="npu-smi",
                         devices=tuple(devices), driver_version=driver, hints=tuple(hints))]


def parse_npu_smi_info(text: str) -> tuple[tuple[Device, ...], str | None, tuple[Hint, ...]]:
    """`npu-smi info` text -> (devices, driver version, health hints), through the npu-smi
    backend's own parsers and mapping (imported lazily: only npu nodes need them)."""
    from gputop.backends.npu_smi.mapping import health_hints, table_devices
    from gputop.backends.npu_smi.table import parse_table

    table = parse_table(text)
    devices = tuple(table_devices(table))
    health = {dev.index: chip.health for dev, chip in zip(devices, table.chips, strict=True)}
    return devices, (printable(table.version, 64) if table.version else None), \
        tuple(health_hints(devices, health))
