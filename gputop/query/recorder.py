"""Recording a live session (the dashboard's `r` key): an nvidia-smi CSV log, and beside it the
snapshot stream.

Textual-free: the dashboard hands each snapshot to :meth:`Recording.write`. The CSV log
(:class:`Recorder`) is exactly the format of `gputop --query-gpu … --format=csv`, so `gputop
replay FILE` and any nvidia-smi log reader open it; it has no processes. The stream
(:class:`StreamRecorder`, the same name ending ``.ndjson``) is the agent's lines, whole
snapshots with their processes, so `gputop report FILE` can say who held each GPU. Both are
written in whole lines at once (see gputop.query.sink).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from gputop.analysis.waste import READS as LEDGER_READS
from gputop.core import budget
from gputop.core.errors import GputopError
from gputop.core.model import Snapshot, snapshot_to_json
from gputop.formats.agent_stream import encode_line, hello_document
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


class _LogFile:
    """A file written in whole pieces through a FileSink (gputop.query.sink) until
    :meth:`close`: a write that fails (a full disk) closes it, the file ending with its last
    whole piece."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.rows = 0
        self._sink: FileSink | None = FileSink(path)

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

    def close(self) -> None:
        sink, self._sink = self._sink, None
        if sink is not None:
            sink.close()


class Recorder(_LogFile):
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
        super().__init__(path)
        self.units = units
        self.started = time.time()
        if header:
            self._write(header_line(self.fields), header=True)

    @property
    def wants(self) -> dict[str, float]:
        """What the rows print (gputop.core.budget): the dashboard asks for it while recording."""
        return query_wants("gpu", self.fields)

    def write(self, snapshot: Snapshot, count: int | None = None) -> int:
        """Append one row per device; returns the rows written. ``count``: GPUs in the node."""
        text = gpu_lines(self.fields, snapshot, len(snapshot.devices) if count is None else count,
                         self.units)
        if text:
            self._write(text)
        n = text.count("\n")
        self.rows += n
        return n

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


STREAM_SUFFIX = ".ndjson"


def stream_path(path: str) -> str:
    """Return where the stream of the CSV log ``path`` goes: its name, ending ``.ndjson``."""
    return os.path.splitext(path)[0] + STREAM_SUFFIX


class StreamRecorder(_LogFile):
    """Writes snapshots to ``path`` (created or truncated) as `gputop agent` streams them: the
    hello, then one ``gputop/1`` snapshot per line; what `gputop report` reads. Raises
    GputopError for a path that cannot be written, and :meth:`write` LogWriteError (the file
    then ends with its last whole line)."""

    def __init__(self, path: str, backend: str, host: str) -> None:
        super().__init__(path)
        self._write(encode_line(hello_document(backend, host)).decode("ascii"), header=True)

    @property
    def wants(self) -> budget.Wants:
        """What job accounting reads, on every sample: a sample without it would be a hole."""
        return LEDGER_READS

    def write(self, snapshot: Snapshot) -> int:
        """Append the snapshot's line; returns the lines written (0: a sample holding a
        non-finite number, which JSON cannot carry, is left out as the agent leaves it out)."""
        try:
            line = encode_line(snapshot_to_json(snapshot))
        except ValueError:
            return 0
        self._write(line.decode("ascii"))
        self.rows += 1
        return 1


class Recording:
    """The dashboard's recording: the CSV log at ``path`` and its stream beside it
    (:func:`stream_path`), started, written and stopped together. Raises GputopError as the two
    recorders do; a write that fails closes both."""

    def __init__(self, path: str, backend: str, host: str,
                 fields: Sequence[str] | str = DEFAULT_FIELDS) -> None:
        self.csv = Recorder(path, fields)
        try:
            self.stream = StreamRecorder(stream_path(path), backend, host)
        except GputopError:
            self.csv.close()
            raise

    @property
    def paths(self) -> tuple[str, str]:
        """The CSV log's path and the stream's."""
        return self.csv.path, self.stream.path

    @property
    def shown_name(self) -> str:
        """Name both files at once, for the dashboard's header: ``gputop-….{csv,ndjson}``."""
        stem, ext = os.path.splitext(os.path.basename(self.csv.path))
        return f"{stem}.{{{ext.lstrip('.')},{STREAM_SUFFIX.lstrip('.')}}}"

    @property
    def wants(self) -> budget.Wants:
        """What the two read together (a recording takes only samples holding all of it)."""
        merged = budget.merge([self.csv.wants, self.stream.wants])
        assert merged is not None  # both name their fields
        return merged

    def write(self, snapshot: Snapshot, count: int | None = None) -> None:
        """Append one sample to both; ``count``: GPUs in the node (the CSV's ``count``)."""
        try:
            self.csv.write(snapshot, count)
            self.stream.write(snapshot)
        except GputopError:
            self.close()
            raise

    def close(self) -> None:
        try:
            self.csv.close()
        finally:
            self.stream.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
