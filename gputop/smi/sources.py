"""A snapshot's values as `nvidia-smi -q` writes them: the Sources of gputop.formats.smi_doc.

Every value the model holds comes through the `--query-gpu` field it belongs to
(gputop.formats.smi_fields), so `-q` and query mode never disagree. A device read from a capture
adds the capture's own values for what the model does not hold; anything else is N/A.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputop.core.model import Device, MigInstance, Process, Snapshot
from gputop.formats import smi_doc, smi_fields, smi_table
from gputop.formats.query_csv import process_name
from gputop.formats.smi_capture import (
    MIG_KEYS,
    MIG_LIST,
    PROCESS_KEYS,
    PROCESS_LIST,
    CapturedDevice,
)
from gputop.formats.smi_table import stamp

Path = smi_doc.Path
HEAD_KEYS = {  # the document's top lines: (text label, XML tag)
    "time": ("Timestamp", "timestamp"),
    "driver": ("Driver Version", "driver_version"),
    "cuda": ("CUDA Version", "cuda_version"),
    "count": ("Attached GPUs", "attached_gpus"),
}


def _mib(value: float | None) -> str | None:
    return None if value is None else f"{value:.0f} MiB"


def _int(value: int | None) -> str | None:
    return None if value is None else str(value)


class HeadSource:
    """Time stamp, driver, CUDA and the number of GPUs the node has (not only those shown)."""

    def __init__(self, snap: Snapshot, count: int, xml: bool) -> None:
        self._values = {
            HEAD_KEYS["time"][xml]: stamp(snap.time),
            HEAD_KEYS["driver"][xml]: snap.driver_version,
            HEAD_KEYS["cuda"][xml]: snap.cuda_version,
            HEAD_KEYS["count"][xml]: str(count),
        }

    def value(self, path: Path) -> str | None:
        return self._values.get(path[0]) if len(path) == 1 else None

    def items(self, path: Path) -> Sequence[smi_doc.Source] | None:
        return None


class _Entry:
    """A list entry: the model's values by path, then the captured entry's own."""

    def __init__(self, values: dict[Path, str | None], captured: smi_doc.Source | None) -> None:
        self._values = values
        self._captured = captured

    def value(self, path: Path) -> str | None:
        if path in self._values:
            return self._values[path]
        return self._captured.value(path) if self._captured is not None else None

    def items(self, path: Path) -> Sequence[smi_doc.Source] | None:
        return self._captured.items(path) if self._captured is not None else None


def process_entry(proc: Process, xml: bool, captured: smi_doc.Source | None) -> _Entry:
    k = PROCESS_KEYS[xml]
    return _Entry({k["gi"]: _int(proc.gpu_instance_id), k["ci"]: _int(proc.compute_instance_id),
                   k["pid"]: str(proc.pid), k["type"]: proc.type or "C",
                   k["name"]: process_name(proc), k["memory"]: _mib(proc.gpu_memory_mib)},
                  captured)


def mig_entry(mig: MigInstance, xml: bool, captured: smi_doc.Source | None) -> _Entry:
    # No "free": nvidia-smi's is not total - used (it rounds bytes: 20096 - 17 = 20080 MiB).
    k = MIG_KEYS[xml]
    return _Entry({k["index"]: _int(mig.index), k["gi"]: str(mig.gpu_instance_id),
                   k["ci"]: str(mig.compute_instance_id), k["sm"]: _int(mig.sm_count),
                   k["total"]: _mib(mig.memory_total_mib), k["used"]: _mib(mig.memory_used_mib)},
                  captured)


class GpuSource:
    """One device's `-q` values."""

    def __init__(self, snap: Snapshot, dev: Device, count: int, xml: bool,
                 processes_known: bool) -> None:
        self.snap, self.dev, self.count, self.xml = snap, dev, count, xml
        self.processes_known = processes_known
        captured = None
        if isinstance(dev, CapturedDevice) and dev.reported is not None \
                and dev.reported_xml == xml:
            captured = smi_doc.Captured(dev.reported)
        self.captured = captured

    def value(self, path: Path) -> str | None:
        if not path:
            return self.dev.pci_bus_id
        place = smi_fields.BY_PATH.get((self.xml, path))
        if place is not None:
            get = place.field.get
            value = get(self.snap, self.dev, self.count) if get is not None else None
            return smi_fields.write(place, value, self.xml)
        return self.captured.value(path) if self.captured is not None else None

    def _captured_items(self, path: Path) -> Sequence[smi_doc.Source]:
        found = self.captured.items(path) if self.captured is not None else None
        return found or ()

    def items(self, path: Path) -> Sequence[smi_doc.Source] | None:
        if path == PROCESS_LIST[self.xml]:
            if not self.processes_known:
                return None
            raw = self._captured_items(path)
            procs = self.dev.processes
            return [process_entry(procs[i], self.xml, raw[i] if i < len(raw) else None)
                    for i in smi_table.listing_order(procs)]
        if path == MIG_LIST[self.xml]:
            raw = self._captured_items(path)
            return [mig_entry(m, self.xml, raw[i] if i < len(raw) else None)
                    for i, m in enumerate(self.dev.mig_instances)]
        return self.captured.items(path) if self.captured is not None else None


__all__ = ["GpuSource", "HeadSource", "mig_entry", "process_entry"]
