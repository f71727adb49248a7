"""Frames: one typed row of numbers per key per sample, in a ring sized by time.

A frame is what one sample said of every key of one kind (a device index, a process key): the
keys' order (a `Layout`, shared by consecutive frames while the keys do not change) and one flat
`array` of their fields, row after row. Frames live in two tiers: the newest ``fine`` samples as
they were read, and ``coarse`` older buckets, each kept as the first sample that fell in it (the
same frame object while both tiers hold it). A bucket's width is the history's span over
``coarse``, never less than the sampling interval, so the tiers hold at least the span at any
interval the user picks, in a number of frames fixed up front.

Why one sample per bucket and not a mean or a peak: a percentile or a mean over the hour (the
advisor's draw, a job's energy from a counter) stays unbiased, and a sample costs nothing to fold.
What it loses: a spike shorter than a bucket may not show in the older part of a plot.

No reading is stored as ``NA``: every field kept here is a count, a size, a share or a rate, never
below zero, so the sentinel can't collide with a reading.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field

NA = -1.0  # no reading (see the module's doc)


@dataclass(frozen=True, slots=True)
class Tiers:
    """How many frames each tier keeps: ``fine`` samples, then ``coarse`` buckets."""

    fine: int
    coarse: int


@dataclass(slots=True)
class Layout:
    """The keys of a frame, in row order, with each key's row."""

    keys: tuple[Hashable, ...]
    rows: dict[Hashable, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rows = {k: i for i, k in enumerate(self.keys)}


@dataclass(slots=True)
class Frame:
    time: float
    layout: Layout
    values: array  # len(layout.keys) * width numbers, row after row


class FrameRing:
    """The frames of one kind of key (devices or processes), fine and coarse, oldest first."""

    def __init__(self, width: int, tiers: Tiers, typecode: str = "f", span_s: float = 3600.0,
                 interval: float = 1.0) -> None:
        self.width = width
        self.typecode = typecode
        self.tiers = tiers
        self.fine: deque[Frame] = deque(maxlen=tiers.fine)
        self.coarse: deque[Frame] = deque(maxlen=tiers.coarse)
        self._span_s = span_s
        self._bucket_s = self.bucket_for(span_s, interval)
        self._bucket: int | None = None  # the newest coarse frame's bucket
        self._layout = Layout(())

    def bucket_for(self, span_s: float, interval: float) -> float:
        """The width of a coarse bucket: the span over the coarse frames, at least one sample."""
        return max(interval, span_s / max(1, self.tiers.coarse))

    @property
    def bucket_s(self) -> float:
        return self._bucket_s

    def set_interval(self, interval: float) -> None:
        """Re-derive the bucket width (the next sample opens a bucket of the new width)."""
        self._bucket_s = self.bucket_for(self._span_s, interval)
        self._bucket = None

    def layout(self, keys: tuple[Hashable, ...]) -> Layout:
        """The layout for ``keys``: the previous frame's while the keys are the same."""
        if keys != self._layout.keys:
            self._layout = Layout(keys)
        return self._layout

    def append(self, time: float, keys: tuple[Hashable, ...], values: Sequence[float]) -> None:
        """Take one sample: ``values`` holds ``width`` numbers per key, in the keys' order."""
        frame = Frame(time, self.layout(keys), array(self.typecode, values))
        self.fine.append(frame)
        bucket = int(time // self._bucket_s)
        if bucket != self._bucket:  # the first sample of a bucket stands for all of it
            self._bucket = bucket
            self.coarse.append(frame)

    # ------------------------------------------------------------------ reading
    def frames(self, since: float | None = None) -> Iterator[Frame]:
        """Every frame oldest first: the coarse ones older than the oldest fine one, then the
        fine ones; only those at or after ``since`` where given."""
        oldest_fine = self.fine[0].time if self.fine else float("inf")
        for frame in self.coarse:
            if frame.time >= oldest_fine:
                break
            if since is None or frame.time >= since:
                yield frame
        for frame in self.fine:
            if since is None or frame.time >= since:
                yield frame

    def series(self, key: Hashable, columns: Sequence[int], since: float | None = None,
               points: int | None = None) -> tuple[list[float], list[list[float | None]]]:
        """(times, one list of values per column) of one key, oldest first; a frame without the
        key is left out, a missing reading is None. ``points``: only the newest that many
        frames."""
        frames = list(self.frames(since))
        if points is not None:
            frames = frames[-points:]
        times: list[float] = []
        values: list[list[float | None]] = [[] for _ in columns]
        w = self.width
        for frame in frames:
            row = frame.layout.rows.get(key)
            if row is None:
                continue
            times.append(frame.time)
            at = row * w
            for out, column in zip(values, columns, strict=True):
                v = frame.values[at + column]
                out.append(None if v == NA else v)
        return times, values

    @property
    def oldest(self) -> float | None:
        first = next(self.frames(), None)
        return first.time if first is not None else None

    def nbytes(self) -> int:
        """The bytes the frames' numbers take (the bench prints it)."""
        frames = {id(f): f for tier in (self.fine, self.coarse) for f in tier}  # shared once
        return sum(len(f.values) * f.values.itemsize for f in frames.values())
