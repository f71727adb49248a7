"""The hints' window: what the hints judge a pattern on, per device, over the last minute.

No whole snapshot is kept. Each device that answered (status ok) has a track: the times of its
samples and one typed column per field of `fields.WINDOW_FIELDS` (its processes kept as the two
figures the hints take of them); each of its MIG instances a track of `fields.INSTANCE_FIELDS`,
keyed by (GPU, GPU instance, compute instance). Beside them, each device's newest reading as
read (a `Device`: what the hints word a message from, and whose processes tell a straggler's
job); for a device that answers now it is the newest sample's.

A sample may stand for its step only while it is one: `append`'s ``step`` drops the newest
sample so far when the next one comes less than ``step`` after the one before it, so that the
history keeps about one sample a second at any interval (``step`` 0 keeps every sample).

A missing reading is stored as `frames.NA` (every field here is a share, a rate, a ratio or a
bit mask: never below zero) and read back as None.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TypeVar

from gputop.core.model import Device, Snapshot
from gputop.history.fields import INSTANCE_FIELDS, WINDOW_FIELDS
from gputop.history.frames import NA

K = TypeVar("K", bound=Hashable)

def values(column: array) -> list[float | None]:
    """A column's numbers, a missing reading (NA) as None."""
    return [None if v == NA else v for v in column]


class Track:
    """One key's samples, oldest first: their times, where the key stood in each sample's
    devices (the order the hints meet devices in), and a typed column per field."""

    __slots__ = ("columns", "places", "times")

    def __init__(self, width: int) -> None:
        self.times = array("d")
        self.places = array("i")
        self.columns = [array("d") for _ in range(width)]

    def push(self, time: float, place: int, values: Sequence[float | None]) -> None:
        self.times.append(time)
        self.places.append(place)
        for column, v in zip(self.columns, values, strict=True):
            column.append(NA if v is None else v)

    def drop_newest(self, time: float) -> None:
        """Forget the sample taken at ``time`` if it is this track's newest."""
        if self.times and self.times[-1] == time:
            self.times.pop()
            self.places.pop()
            for column in self.columns:
                column.pop()

    def drop_before(self, oldest: float) -> None:
        k = bisect_left(self.times, oldest)
        if k:
            del self.times[:k]
            del self.places[:k]
            for column in self.columns:
                del column[:k]

    def nbytes(self) -> int:
        n = len(self.times)
        return n * (self.times.itemsize + self.places.itemsize
                    + sum(column.itemsize for column in self.columns))

    def start(self, since: float) -> int:
        """The position of the first sample at or after ``since``."""
        return bisect_left(self.times, since)

    def read(self, start: int) -> tuple[list[float], list[array]]:
        """(times, each field's column) from the ``start``-th sample on, copied."""
        return self.times[start:].tolist(), [column[start:] for column in self.columns]


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
                snap.time, place, [f.read(dev) for f in WINDOW_FIELDS])
            self._latest[dev.index] = dev
            seen: set[tuple[int, int, int]] = set()
            for inst in dev.mig_instances:
                key = (dev.index, inst.gpu_instance_id, inst.compute_instance_id)
                if key not in seen:  # the first one of its ids, as the hints find it
                    seen.add(key)
                    self._track(self._instances, key, len(INSTANCE_FIELDS)).push(
                        snap.time, place, [f.read(inst) for f in INSTANCE_FIELDS])
        while snap.time - times[0] > self.window_s + 1e-9:
            times.popleft()
        self._drop_before(times[0])

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

    def __len__(self) -> int:
        """How many samples the window holds."""
        return len(self._times)

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
