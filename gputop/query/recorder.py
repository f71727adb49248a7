"""Recording a live session to an nvidia-smi CSV log (the dashboard's `r` key).

Textual-free: the dashboard hands each snapshot to :meth:`Recorder.write`. Rows are written whole
and at once (see gputop.query.sink), in exactly the format of `gputop --query-gpu … --format=csv`,
so `gputop replay FILE` and any nvidia-smi log reader open the result.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from gputop.core.errors import GputopError
from gputop.core.model import Snapshot
from gputop.formats.query_csv import gpu_lines, header_line
from gputop.formats.query_fields import Field, InvalidField, parse_field_list, query_wants
from gputop.query.sink import FileSink, LogWriteError

# What a person wants back from a training run: identity, load, memory, power, clocks, throttling.
DEFAULT_FIELDS: tuple[str, ...] = (
    "timestamp", "index", "name", "pci.bus_id", "pstate", "temperature.gpu", "temperature.memory",
    "utilization.gpu", "utilization.memory", "memory.total", "memory.used", "power.draw",
    "power.limit", "clocks.sm", "clocks.mem", "clocks_event_reasons.active",
)


def default_path(folder: str = ".", now: float | None = None) -> str:
    """``gputop-20260714-081238.csv`` in ``folder`` (a name that sorts by time)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if now is None else now))
    return os.path.join(folder, f"gputop-{stamp}.csv")


class Recorder:
    """Writes snapshots as CSV rows to ``path`` (created or truncated) until :meth:`close`.

    ``fields``: nvidia-smi field names or aliases, or a comma-separated string. Raises
    GputopError for an unknown field or a path that cannot be written; :meth:`write` raises
    LogWriteError (a GputopError) if the disk fills, after which the recorder is closed and the
    file ends with its last whole sample (the error says how many rows it holds).
    """

    def __init__(self, path: str, fields: Sequence[str] | str = DEFAULT_FIELDS,
                 units: bool = True, header: bool = True) -> None:
        text = fields if isinstance(fields, str) else ",".join(fields)
        try:
            self.fields: list[Field] = parse_field_list(text)
        except InvalidField as exc:
            raise GputopError(str(exc)) from None
        self.path = path
        self.units = units
        self.rows = 0
        self.started = time.time()
        self._sink: FileSink | None = FileSink(path)
        if header:
            self._write(header_line(self.fields), header=True)

    @property
    def wants(self) -> dict[str, float]:
        """What the rows print (gputop.core.budget): the dashboard asks for it while recording."""
        return query_wants("gpu", self.fields)

    @property
    def closed(self) -> bool:
        return self._sink is None

    def _write(self, text: str, header: bool = False) -> None:
        if self._sink is None:
            raise LogWriteError(f"recording to {self.path} is closed")
        try:
            if header:
                self._sink.write_header(text)
            else:
                self._sink.write(text)
        except LogWriteError:
            self.close()
            raise

    def write(self, snapshot: Snapshot, count: int | None = None) -> int:
        """Append one row per device; returns the rows written. ``count``: GPUs in the node."""
        text = gpu_lines(self.fields, snapshot, len(snapshot.devices) if count is None else count,
                         self.units)
        if text:
            self._write(text)
        n = text.count("\n")
        self.rows += n
        return n

    def close(self) -> None:
        sink, self._sink = self._sink, None
        if sink is not None:
            sink.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
