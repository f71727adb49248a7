"""The hints' window: what the hints judge a pattern on, per device, over the last minute.

No whole snapshot is kept. Each device that answered (status ok) has a track: the times of its
samples and, typed, its readings of each field of `fields.WINDOW_FIELDS` (its processes kept as
the two figures the hints take of them); each of its MIG instances a track of
`fields.INSTANCE_FIELDS`, keyed by (GPU, GPU instance, compute instance). Beside them, each device's newest reading as
read (a `Device`: what the hints word a message from, and whose processes tell a straggler's
job); for a device that answers now it is the newest sample's.

A sample may stand for its step only while it is one: `append`'s ``step`` drops the newest
sample so far when the next one comes less than ``step`` after the one before it, so that the
history keeps about one sample a second at any interval (``step`` 0 keeps every sample).

A missing reading is stored as `frames.NA` (every field here is a share, a rate, a ratio or a
bit mask: never below zero) and read back as None (`values`), by a reader only for the fields it
needs: what a tick costs is what the hints did with the whole snapshots, or less.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import TypeVar

from gputop.core.model import Device, Snapshot
from gputop.history.fields import INSTANCE_FIELDS, WINDOW_FIELDS
from gputop.history.frames import NA

K = TypeVar("K", bound=Hashable)


def values(column: array) -> list[float | None]:
    """A column's numbers, a missing reading (NA) as None."""
    if NA not in column:  # most columns: a scan in C, then a copy in C
        return column.tolist()
    return [None if v == NA else v for v in column]


TRIM_EVERY = 16  # samples: the tracks drop what aged out this often, at most this many late


class Track:
    """One key's samples, oldest first: their times, where the key stood in each sample's
    devices (the order the hints meet devices in), and their readings, ``width`` numbers a
    sample, row after row in one typed array (a sample is one append; a column one strided
    slice)."""

    __slots__ = ("places", "times", "values", "width")

    def __init__(self, width: int) -> None:
        self.width = width
        self.times = array("d")
        self.places = array("i")
        self.values = array("d")

    def push(self, time: float, place: int, row: list[float]) -> None:
        """Take one sample's ``row`` (``width`` numbers, NA for a missing reading)."""
        self.times.append(time)
        self.places.append(place)
        self.values.extend(row)

    def drop_newest(self, time: float) -> None:
        """Forget the sample taken at ``time`` if it is this track's newest."""
        if self.times and self.times[-1] == time:
            self.times.pop()
            self.places.pop()
            del self.values[-self.width:]

    def drop_before(self, oldest: float) -> None:
        k = bisect_left(self.times, oldest)
        if k:
            del self.times[:k]
            del self.places[:k]
            del self.values[:k * self.width]

    def nbytes(self) -> int:
        return (len(self.times) * (self.times.itemsize + self.places.itemsize)
                + len(self.values) * self.values.itemsize)

    def start(self, since: float) -> int:
        """The position of the first sample at or after ``since``."""
        return bisect_left(self.times, since)

    def read(self, start: int) -> tuple[list[float], list[array]]:
        """(times, each field's column) from the ``start``-th sample on, copied."""
        w = self.width
        return (self.times[start:].tolist(),
                [self.values[start * w + c::w] for c in range(w)])


@dataclass(frozen=True, slots=True)
class DeviceWindow:
    """One device's samples in the window: their times, a column per field of
    `fields.WINDOW_FIELDS` (read with `values`: the reader converts only the columns it needs),
    each MIG instance's (times, columns) by (GPU instance, compute instance), and the device's
    newest reading."""

    index: int
    latest: Device
    times: list[float]
    columns: list[array]
    instances: dict[tuple[int, int], tuple[list[float], list[array]]]


class Window:
    """The tracks of the last ``window_s`` seconds of samples (see the module's doc)."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._times: deque[float] = deque()  # every sample's, oldest first
        self._devices: dict[int, Track] = {}
        self._instances: dict[tuple[int, int, int], Track] = {}
        self._latest: dict[int, Device] = {}
        self._appended = 0

    def append(self, snap: Snapshot, step: float = 0.0) -> None:
        """Take one sample in (newer than the last; see the module's doc for ``step``)."""
        times = self._times
        if len(times) >= 2 and times[-1] - times[-2] < step:
            dropped = times.pop()
            for track in self._tracks():
                track.drop_newest(dropped)
        times.append(snap.time)
        for place, dev in enumerate(snap.devices):
            if dev.status != "ok":
                continue
            self._track(self._devices, dev.index, len(WINDOW_FIELDS)).push(
                snap.time, place, [NA if (v := f.read(dev)) is None else v for f in WINDOW_FIELDS])
            self._latest[dev.index] = dev
            if dev.mig_instances:
                self._append_instances(snap.time, place, dev)
        while snap.time - times[0] > self.window_s + 1e-9:
            times.popleft()
        self._appended += 1
        if self._appended % TRIM_EVERY == 0:  # `read` leaves the older samples out meanwhile
            self._drop_before(times[0])

    def _append_instances(self, time: float, place: int, dev: Device) -> None:
        seen: set[tuple[int, int, int]] = set()
        for inst in dev.mig_instances:
            key = (dev.index, inst.gpu_instance_id, inst.compute_instance_id)
            if key not in seen:  # the first one of its ids, as the hints find it
                seen.add(key)
                self._track(self._instances, key, len(INSTANCE_FIELDS)).push(
                    time, place, [NA if (v := f.read(inst)) is None else v
                                  for f in INSTANCE_FIELDS])

    @staticmethod
    def _track(tracks: dict[K, Track], key: K, width: int) -> Track:
        track = tracks.get(key)
        if track is None:
            track = tracks[key] = Track(width)
        return track

    def _drop_before(self, oldest: float) -> None:
        """Drop the samples before ``oldest``, and the tracks (and newest readings) left empty."""
        _drop_before(self._devices, oldest)
        _drop_before(self._instances, oldest)
        for index in [i for i in self._latest if i not in self._devices]:
            del self._latest[index]

    def read(self, seconds: float, max_samples: int) -> list[DeviceWindow]:
        """Each device's samples of the last ``seconds`` before the newest (at most the newest
        ``max_samples`` samples), in the order the devices first answered in them."""
        times = self._times
        if not times:
            return []
        newest, since = times[-1], times[-1]
        for t in islice(reversed(times), max_samples):  # walking back from the newest only
            if newest - t > seconds + 1e-9:
                break
            since = t
        starts = {i: (track, track.start(since)) for i, track in self._devices.items()}
        met = sorted((track.times[k], track.places[k], i)
                     for i, (track, k) in starts.items() if k < len(track.times))
        out: list[DeviceWindow] = []
        for _, _, index in met:
            track, k = starts[index]
            instances = {(key[1], key[2]): inst.read(inst.start(since))
                         for key, inst in self._instances.items() if key[0] == index}
            out.append(DeviceWindow(index, self._latest[index], *track.read(k), instances))
        return out

    def nbytes(self) -> int:
        """The bytes the tracks' numbers take."""
        return sum(track.nbytes() for track in self._tracks())

    def _tracks(self) -> Iterator[Track]:
        yield from self._devices.values()
        yield from self._instances.values()


def _drop_before(tracks: dict[K, Track], oldest: float) -> None:
    """Drop the samples before ``oldest`` from each of ``tracks``, and the tracks left empty."""
    for key, track in list(tracks.items()):
        track.drop_before(oldest)
        if not track.times:
            del tracks[key]
