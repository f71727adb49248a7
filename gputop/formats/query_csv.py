"""Snapshots to nvidia-smi CSV lines: ``", "``-separated cells, header with unit tags.

A device or process read back from a log (gputop.backends.replay.backend) carries the log's own cells
(``cells``); those are printed as they were, so a replayed log reproduces its bytes exactly.

nvidia-smi writes every value as it is, never quoted (a ``-q`` process name such as
``[celeryd: …]`` comes out verbatim too), and scripts read its CSV line by line and split at
``", "``. A name is whatever its process chose (``argv[0]`` may hold a newline, a comma, an
escape sequence), so a text cell is written so that it can neither start a row nor a column,
nor act on the terminal a log is later printed to: controls and invisible characters as
``gputop.core.visible`` shows them (a newline is ``^J``, ESC ``^[``), a comma as ``\x2c`` and a
double quote (which would open a quoted field for a CSV reader) as ``\x22``. Ordinary names
are written byte for byte as nvidia-smi writes them. A log's own cells keep their commas (the
row they came from is what it was) but not their controls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from gputop.core.model import Device, Process, Snapshot
from gputop.core.visible import visible
from gputop.formats.query_fields import (
    Field,
    adjust_units,
    format_timestamp,
    format_value,
    unavailable,
)
from gputop.formats.query_log import LoggedDevice, LoggedProcess

SEP = ", "


def text_cell(text: str) -> str:
    """A name (a free-text value) as one cell that adds no row and no column (see above)."""
    text = visible(text)
    if "," in text or '"' in text:
        text = text.replace(",", r"\x2c").replace('"', r"\x22")
    return text


def _value_cell(field: Field, value: object, units: bool) -> str:
    text = format_value(field, value, units)
    return text_cell(text) if field.kind == "str" else text


def header_line(fields: Sequence[Field]) -> str:
    # `nounits` leaves the header's unit tags in place, as real nvidia-smi output shows.
    return SEP.join(f.header for f in fields) + "\n"


def _cell(field: Field, snap: Snapshot, dev: Device, count: int, units: bool,
          cells: Mapping[str, str] | None, stamp: str) -> str:
    if cells is not None:
        raw = cells.get(field.name)
        if raw is not None:
            return visible(adjust_units(field, raw, units))
    if field.kind == "timestamp":
        return stamp
    if field.get is None:
        return unavailable(field, dev, snap.driver_version)
    value = field.get(snap, dev, count)
    if value is None:
        return unavailable(field, dev, snap.driver_version)
    return _value_cell(field, value, units)


def gpu_lines(fields: Sequence[Field], snap: Snapshot, count: int, units: bool = True) -> str:
    """One line per device of ``snap`` (``count``: GPUs in the system, for the `count` field)."""
    stamp = format_timestamp(snap.time)
    out = []
    for dev in snap.devices:
        cells = dev.cells if isinstance(dev, LoggedDevice) else None  # a replayed log's own
        out.append(SEP.join(_cell(f, snap, dev, count, units, cells, stamp) for f in fields))
    return "".join(line + "\n" for line in out)


def _is_compute(proc: Process) -> bool:
    return proc.type is None or "C" in proc.type


def process_name(proc: Process) -> str | None:
    # nvidia-smi prints argv[0] as the process was started ("/root/tools/memhog", "./gpu_burn").
    if proc.command:
        return proc.command.split(" ", 1)[0]
    return proc.name


def _app_value(field: Field, snap: Snapshot, dev: Device, proc: Process) -> object:
    name = field.name
    if name == "timestamp":
        return snap.time
    if name == "gpu_name":
        return dev.name
    if name == "gpu_bus_id":
        return dev.pci_bus_id
    if name == "gpu_serial":
        return dev.serial
    if name == "gpu_uuid":
        return dev.uuid
    if name == "pid":
        return proc.pid
    if name == "process_name":
        return process_name(proc)
    if name == "used_gpu_memory":
        return proc.gpu_memory_mib
    return None


def _app_line(fields: Sequence[Field], snap: Snapshot, dev: Device, proc: Process | None,
              cells: Mapping[str, str] | None, units: bool, stamp: str) -> str:
    out = []
    for f in fields:
        raw = cells.get(f.name) if cells is not None else None
        if raw is not None:
            out.append(visible(adjust_units(f, raw, units)))
            continue
        if f.name == "timestamp":
            out.append(stamp)
            continue
        value = _app_value(f, snap, dev, proc) if proc is not None else None
        out.append(unavailable(f, dev, snap.driver_version) if value is None
                   else _value_cell(f, value, units))
    return SEP.join(out) + "\n"


def apps_lines(fields: Sequence[Field], snap: Snapshot, units: bool = True) -> str:
    """`--query-compute-apps`: one line per compute process, GPU by GPU."""
    stamp = format_timestamp(snap.time)
    out = []
    for dev in snap.devices:
        for proc in dev.processes:
            if _is_compute(proc):
                cells = proc.cells if isinstance(proc, LoggedProcess) else None
                out.append(_app_line(fields, snap, dev, proc, cells, units, stamp))
    return "".join(out)


def accounted_lines(fields: Sequence[Field], snap: Snapshot, units: bool = True) -> str:
    """`--query-accounted-apps`: only replayed logs hold accounted apps (see fields.py)."""
    stamp = format_timestamp(snap.time)
    out = []
    for dev in snap.devices:
        for cells in dev.accounted if isinstance(dev, LoggedDevice) else ():
            out.append(_app_line(fields, snap, dev, None, cells, units, stamp))
    return "".join(out)


def lines_for(query: str, fields: Sequence[Field], snap: Snapshot, count: int,
              units: bool = True) -> str:
    if query == "gpu":
        return gpu_lines(fields, snap, count, units)
    if query == "compute-apps":
        return apps_lines(fields, snap, units)
    return accounted_lines(fields, snap, units)


def all_lines(query: str, fields: Sequence[Field], snaps: Iterable[Snapshot], count: int,
              units: bool = True) -> str:
    return "".join(lines_for(query, fields, s, count, units) for s in snaps)
