"""The sampler's history: what every consumer reads of the past, in one place.

Two parts, one interface:

- the **window** (window.py): what the hints judge a pattern on over the last ``window_s``
  seconds, per device as typed columns of the readings they read (`fields.WINDOW_FIELDS`): the
  newest sample always, and before it about one per ``window_s / WINDOW_SAMPLES`` seconds (every
  sample at 1 s; one in ten at 0.1 s), so that the hints read sixty samples at any interval;
- the **columns**: each field of `fields` per device and per process, as typed frames in a ring
  sized by time (frames.py): at least ``span_s`` (an hour by default) at any interval, older
  points folded into buckets, in a number of bytes fixed up front (`nbytes`). A process that
  ended keeps its series, and its last row, until they age out.

Beside them, per device, the runs of which processes held it (for a job's energy since it took
the GPU), kept as changes only; and the newest snapshot, the one whole snapshot kept. Nothing
else keeps a copy: the hints, the cards, the plot, the saturation panel, the advisor's passive
view, per-job energy and the process detail view all read here.
Thread-safe: the sampler appends on its thread, consumers read on theirs.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from operator import attrgetter

from gputop.core.bounds import HISTORY_DEFAULT_S
from gputop.core.model import Process, Snapshot
from gputop.history.fields import (
    DEVICE_COLUMNS,
    DEVICE_FIELDS,
    PROCESS_COLUMNS,
    PROCESS_FIELDS,
    ProcessKey,
    process_key,
)
from gputop.history.frames import NA, FrameRing, Tiers
from gputop.history.window import DeviceWindow, Window

SPAN_S = HISTORY_DEFAULT_S  # the least the columns keep, at any interval (--history)
WINDOW_S = 60.0  # the hints' window (gputop.analysis.hints.WINDOW_S)
WINDOW_SAMPLES = 60
# Devices: the cards' sparklines and the plot want the newest samples as read; processes, fewer
# of them (a node may run a thousand), for the detail view's plots.
DEVICE_TIERS = Tiers(fine=300, coarse=360)
PROCESS_TIERS = Tiers(fine=120, coarse=240)

Series = tuple[list[float], list["float | None"]]  # (times, values), oldest first
Columns = tuple[list[float], list[list["float | None"]]]  # (times, values of each field)

_PROCESS_READINGS = attrgetter(*(f.name for f in PROCESS_FIELDS))  # one entry: as it reads


@dataclass(frozen=True, slots=True)
class ProcessSeen:
    """The last row a process had, the GPUs it held then, and when it was last seen."""

    process: Process
    gpus: tuple[int, ...]
    last_seen: float
    gone_at: float | None = None  # the first sample without it, once it left the GPUs


class History:
    """The window and the columns of one stream of snapshots (see the module's doc)."""

    def __init__(self, span_s: float = SPAN_S, interval: float = 1.0,
                 window_s: float = WINDOW_S) -> None:
        self.span_s = span_s
        self.window_s = window_s
        self._interval = interval
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self._window = Window(self.window_s)
        self._latest: Snapshot | None = None
        self._devices = FrameRing(len(DEVICE_FIELDS), DEVICE_TIERS, "d", self.span_s,
                                  self._interval)
        self._processes = FrameRing(len(PROCESS_FIELDS), PROCESS_TIERS, "f", self.span_s,
                                    self._interval)
        self._seen: dict[ProcessKey, ProcessSeen] = {}
        self._holders: dict[int, deque[tuple[float, frozenset[ProcessKey]]]] = {}
        self._count = 0
        self._live: dict[ProcessKey, ProcessSeen] | None = None  # the newest sample's, by key

    # ------------------------------------------------------------------ writing
    def set_interval(self, interval: float) -> None:
        with self._lock:
            self._interval = interval
            self._devices.set_interval(interval)
            self._processes.set_interval(interval)

    def append(self, snap: Snapshot) -> None:
        """Take one sample in. A repeated one is ignored; an older one (a replay seeking back)
        starts the history again: its past is another timeline."""
        with self._lock:
            previous = self._latest
            if previous is not None and snap.time <= previous.time:
                if snap.time == previous.time:
                    return
                self._clear()
                previous = None
            self._count += 1
            self._live = None
            self._latest = snap
            # the newest so far stands for its step of the window only if it is a step on
            # (half an interval of slack: a 1 s schedule that ran a little early is still 1 s)
            self._window.append(snap, self.window_s / WINDOW_SAMPLES - self._interval / 2)
            self._append_devices(snap)
            self._append_processes(snap, previous)
            self._forget(snap.time)

    def _append_devices(self, snap: Snapshot) -> None:
        values: list[float] = []
        for dev in snap.devices:
            for f in DEVICE_FIELDS:
                v = f.read(dev)
                values.append(NA if v is None else v)
        self._devices.append(snap.time, tuple(d.index for d in snap.devices), values)

    def _append_processes(self, snap: Snapshot, previous_snap: Snapshot | None) -> None:
        """One row per process key; a process on several GPUs is one row of its combined
        readings (fields.PROCESS_FIELDS)."""
        procs: list[Process] = []
        for dev in snap.devices:
            # outside our PID namespace its PID is another namespace's: no key here
            mine = [p for p in dev.processes if not p.outside_pid_namespace]
            held = frozenset((p.pid, p.started) for p in mine)
            runs = self._holders.get(dev.index)
            if runs is None:
                runs = self._holders[dev.index] = deque()
            if not runs or runs[-1][1] != held:
                runs.append((snap.time, held))
            procs += mine
        keys = tuple((p.pid, p.started) for p in procs)
        if len(set(keys)) == len(keys):  # each on one GPU: its row as it reads
            readings = chain.from_iterable(map(_PROCESS_READINGS, procs))
        else:
            rows: dict[ProcessKey, list[Process]] = {}
            for key, p in zip(keys, procs, strict=True):
                rows.setdefault(key, []).append(p)
            keys = tuple(rows)
            readings = chain.from_iterable(
                _PROCESS_READINGS(ps[0]) if len(ps) == 1 else [f.read(ps) for f in PROCESS_FIELDS]
                for ps in rows.values())
        values = [NA if v is None else v for v in readings]
        previous = self._processes.fine[-1] if self._processes.fine else None
        self._processes.append(snap.time, keys, values)
        if previous is not None and previous_snap is not None and previous.layout.keys != keys:
            self._remember_gone(previous_snap, set(keys), snap.time)

    def _remember_gone(self, before: Snapshot, now: set, time: float) -> None:
        """Keep the last row of each process that left the GPUs since ``before``."""
        rows = _rows(before)
        for key in rows:
            if key not in now:
                self._seen[key] = replace(rows[key], gone_at=time)

    def _forget(self, now: float) -> None:
        """Drop what aged out of every tier: processes last seen before the oldest frame, and
        runs of holders older than the oldest device frame (the newest one before it stays)."""
        if self._count % 64:
            return  # cheap enough to do now and then
        oldest = self._processes.oldest
        if oldest is not None:
            for key in [k for k, s in self._seen.items() if s.last_seen < oldest]:
                del self._seen[key]
        oldest = self._devices.oldest
        if oldest is not None:
            for runs in self._holders.values():
                while len(runs) > 1 and runs[1][0] <= oldest:
                    runs.popleft()

    # ------------------------------------------------------------------ reading
    def window(self, seconds: float, max_samples: int) -> list[DeviceWindow]:
        """Each device's samples in the window, of the last ``seconds`` before the newest (at
        most its newest ``max_samples``), in the order the devices first answered in them."""
        with self._lock:
            return self._window.read(seconds, max_samples)

    @property
    def latest(self) -> Snapshot | None:
        with self._lock:
            return self._latest

    def device_series(self, index: int, name: str, since: float | None = None,
                      points: int | None = None) -> Series:
        """(times, values) of one device field (fields.DEVICE_FIELDS), oldest first."""
        times, (values,) = self.device_columns(index, (name,), since, points)
        return times, values

    def device_columns(self, index: int, names: Sequence[str], since: float | None = None,
                       points: int | None = None) -> Columns:
        """(times, values of each field named) of one device, from the same samples."""
        with self._lock:
            return self._devices.series(index, [DEVICE_COLUMNS[n] for n in names], since,
                                        points)

    def process_series(self, key: ProcessKey, name: str, since: float | None = None,
                       points: int | None = None) -> Series:
        """(times, values) of one process field (fields.PROCESS_FIELDS), oldest first."""
        times, (values,) = self.process_columns(key, (name,), since, points)
        return times, values

    def process_columns(self, key: ProcessKey, names: Sequence[str], since: float | None = None,
                        points: int | None = None) -> Columns:
        """(times, values of each field named) of one process, from the same samples."""
        with self._lock:
            return self._processes.series(key, [PROCESS_COLUMNS[n] for n in names], since,
                                          points)

    def process(self, key: ProcessKey) -> ProcessSeen | None:
        """The process's last row: now, or when it left; None once it aged out (or was never
        seen)."""
        with self._lock:
            if self._live is None:
                self._live = _rows(self._latest) if self._latest is not None else {}
            return self._live.get(key) or self._seen.get(key)

    def holders(self, index: int) -> list[tuple[float, frozenset[ProcessKey]]]:
        """The runs of which processes held the device: (from when, their keys), oldest first."""
        with self._lock:
            return list(self._holders.get(index, ()))

    @property
    def oldest(self) -> float | None:
        """The time of the oldest sample anything here still stands for."""
        with self._lock:
            return self._devices.oldest

    @property
    def bucket_s(self) -> tuple[float, float]:
        """The coarse buckets' widths: devices', processes'."""
        return self._devices.bucket_s, self._processes.bucket_s

    def __len__(self) -> int:
        """How many samples were taken in."""
        return self._count

    def nbytes(self) -> int:
        """The bytes the columns' and the window's numbers take (the bench prints it)."""
        with self._lock:
            return self._devices.nbytes() + self._processes.nbytes() + self._window.nbytes()

    def extend(self, snaps: Iterable[Snapshot]) -> None:
        for snap in snaps:
            self.append(snap)

    @classmethod
    def of(cls, snaps: Iterable[Snapshot], interval: float = 1.0) -> History:
        """A history of ``snaps`` (oldest first): a recorded run read as the sampler would."""
        history = cls(interval=interval)
        history.extend(snaps)
        return history


def _rows(snap: Snapshot) -> dict[ProcessKey, ProcessSeen]:
    """Each process of ``snap`` by key: its first row, and every GPU it holds."""
    gpus: dict[ProcessKey, list[int]] = {}
    first: dict[ProcessKey, Process] = {}
    for dev in snap.devices:
        for p in dev.processes:
            if not p.outside_pid_namespace:
                key = process_key(p)
                first.setdefault(key, p)
                gpus.setdefault(key, []).append(dev.index)
    return {k: ProcessSeen(first[k], tuple(gpus[k]), snap.time) for k in first}
