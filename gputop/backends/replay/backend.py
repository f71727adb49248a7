"""The replay backend: a CSV log (gputop's or real nvidia-smi's) played back as a node.

`gputop --backend replay --replay FILE …` or `gputop replay FILE`. Rows are grouped into samples
(a new sample starts when a GPU repeats, or when the timestamp changes for logs without a GPU id
column); values parse back into the model, and every device also keeps its log cells, so that query
mode prints them unchanged: replaying a log through `--query-gpu=<its own fields>` reproduces it.

The :class:`Player` moves through the log (play, pause, step, seek, speed); the backend's clock is
the player's, so a Sampler or the dashboard follows the log's own timestamps.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from gputop.backends.base import (
    CAP_PROCESSES,
    REAL_CLOCK,
    Backend,
    BackendError,
    BackendOptions,
    BackendUnavailable,
    Clock,
)
from gputop.core import clock_events, userfile
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, DeviceInfo, NodeInfo, Snapshot
from gputop.formats import smi_capture
from gputop.formats.query_fields import parse_timestamp, parse_value
from gputop.formats.query_log import (
    Log,
    LogFormatError,
    LoggedDevice,
    LoggedProcess,
    Row,
    parse_log,
)

MAX_LINE_BYTES = 1 << 20  # a row of every field of one GPU is under 4 KiB
SYNTHETIC_PERIOD_S = 1.0  # sample spacing assumed for a log without a timestamp column
_ID_COLUMNS = ("index", "uuid", "pci.bus_id")
_APP_GPU_COLUMNS = ("gpu_uuid", "gpu_bus_id", "gpu_serial", "gpu_name")
SEP_KEY = "\x1f"  # joins a process row's GPU columns into one key


@dataclass
class _Sample:
    time: float
    line: int
    devices: list[Device] = field(default_factory=list)


# ---------------------------------------------------------------- log -> samples


def _row_time(row: Row, where: str) -> float | None:
    raw = row.cells.get("timestamp")
    if raw is None:
        return None
    try:
        return parse_timestamp(raw)
    except (ValueError, OverflowError):
        raise LogFormatError(f"{where}:{row.line}: bad timestamp {raw!r}") from None


def _gpu_device(row: Row, log: Log, position: int, where: str) -> LoggedDevice:
    kwargs: dict = {}
    reasons: list[str] = []
    reasons_seen = False
    for col in log.columns:
        f = col.field
        raw = row.cells[col.name]
        if f.name.startswith("clocks_event_reasons.") and f.kind == "active":
            value = parse_value(f, raw)
            if value is not None:
                reasons_seen = True
                if value:
                    reasons.append(f.name.split(".", 1)[1])
            continue
        if f.name == "clocks_event_reasons.active":
            mask = parse_value(f, raw)
            if mask is not None:
                kwargs["clock_event_mask"] = mask
                kwargs["clock_event_reasons"] = clock_events.decode(mask)
            continue
        if f.attr is None or f.attr in kwargs:
            continue
        value = parse_value(f, raw)
        if value is not None:
            kwargs[f.attr] = value
    if "clock_event_reasons" not in kwargs and reasons_seen:
        kwargs["clock_event_reasons"] = tuple(reasons)
    index = kwargs.pop("index", None)
    if index is None and "index" in row.cells:
        raise LogFormatError(f"{where}:{row.line}: bad GPU index {row.cells['index']!r}")
    if index is None:
        index = position
    kwargs["vendor"] = "nvidia"
    return LoggedDevice(index=index, cells=row.cells, **kwargs)


def _gpu_samples(log: Log, where: str) -> list[_Sample]:
    id_col = next((c for c in _ID_COLUMNS if c in log.names), None)
    samples: list[_Sample] = []
    seen: set[str] = set()
    last_time: float | None = None
    for row in log.rows:
        t = _row_time(row, where)
        key = row.cells[id_col] if id_col else None
        if id_col:
            new = not samples or key in seen
        else:  # no GPU id: all rows of one timestamp are one query of several GPUs
            new = not samples or t is None or t != last_time
        if new:
            samples.append(_Sample(time=t if t is not None else 0.0, line=row.line))
            seen = set()
        sample = samples[-1]
        if key is not None:
            seen.add(key)
        last_time = t
        sample.devices.append(_gpu_device(row, log, len(sample.devices), where))
    return samples


def _apps_samples(log: Log, where: str) -> list[_Sample]:
    accounted = log.query == "accounted-apps"
    samples: list[_Sample] = []
    last_time: object = object()
    gpus: dict[str, dict] = {}
    order: list[str] = []

    def flush() -> None:
        if not samples:
            return
        sample = samples[-1]
        for i, key in enumerate(order):
            g = gpus[key]
            if accounted:
                sample.devices.append(LoggedDevice(index=i, accounted=tuple(g["rows"]), **g["id"]))
            else:
                sample.devices.append(LoggedDevice(index=i, processes=tuple(g["rows"]), **g["id"]))

    for row in log.rows:
        t = _row_time(row, where)
        if t != last_time:
            flush()
            samples.append(_Sample(time=t if t is not None else 0.0, line=row.line))
            gpus, order = {}, []
            last_time = t
        key = SEP_KEY.join(row.cells.get(c, "") for c in _APP_GPU_COLUMNS)
        if key not in gpus:
            ident = {"name": row.cells.get("gpu_name"), "pci_bus_id": row.cells.get("gpu_bus_id"),
                     "serial": row.cells.get("gpu_serial"), "uuid": row.cells.get("gpu_uuid"),
                     "vendor": "nvidia"}
            gpus[key] = {"id": {k: v for k, v in ident.items() if v is not None and not
                                v.startswith("[")}, "rows": []}
            order.append(key)
        if accounted:
            gpus[key]["rows"].append(row.cells)
            continue
        pid_text = row.cells.get("pid")
        pid = parse_value(_field(log, "pid"), pid_text) if pid_text is not None else 0
        if not isinstance(pid, int):
            raise LogFormatError(f"{where}:{row.line}: bad pid {pid_text!r}")
        mem = row.cells.get("used_gpu_memory")
        gpus[key]["rows"].append(LoggedProcess(
            pid=pid, name=row.cells.get("process_name"), type="C",
            gpu_memory_mib=parse_value(_field(log, "used_gpu_memory"), mem) if mem else None,
            cells=row.cells))
    flush()
    return samples


def _field(log: Log, name: str):
    for c in log.columns:
        if c.name == name:
            return c.field
    return None


def build_samples(log: Log, where: str, end_time: float = 0.0) -> list[_Sample]:
    """Samples in file order. A log without timestamps gets one sample per SYNTHETIC_PERIOD_S,
    the last at ``end_time`` (the file's modification time: when it was last written)."""
    samples = _gpu_samples(log, where) if log.query == "gpu" else _apps_samples(log, where)
    if "timestamp" not in log.names:
        first = end_time - (len(samples) - 1) * SYNTHETIC_PERIOD_S
        for i, s in enumerate(samples):
            s.time = first + i * SYNTHETIC_PERIOD_S
    return samples


# ---------------------------------------------------------------- player and clock


class Player:
    """Where playback is in the log, in seconds from its first sample.

    Starts playing at ``speed``. ``position`` advances at ``speed`` × real time while playing and
    stops at the end. ``played`` (the clock's monotonic time) advances the same way but is never
    moved by seek or step, so a sampler's schedule does not jump with the position.
    """

    def __init__(self, times: Sequence[float], speed: float = 1.0, playing: bool = True,
                 now=time.monotonic) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.times = list(times)
        self.duration = self.times[-1] if self.times else 0.0
        self._now = now
        self._cond = threading.Condition()
        self._speed = float(speed)
        self._playing = playing and self.duration > 0
        self._real = now()
        self._started = False
        self._pos = 0.0
        self._played = 0.0
        self.version = 0  # bumped on every change a waiter should notice

    # -- state
    def _elapsed(self) -> float:
        if not self._playing:
            return 0.0
        if not self._started:  # the clock starts when first looked at, not when the log loads
            self._started = True
            self._real = self._now()
            return 0.0
        return min((self._now() - self._real) * self._speed, self.duration - self._pos)

    def _rebase(self) -> None:
        # Fold elapsed play into the bases (called under the lock before any change).
        elapsed = self._elapsed()
        self._real = self._now()
        self._started = True
        self._played += elapsed
        self._pos = min(self.duration, self._pos + elapsed)
        if self._pos >= self.duration:
            self._playing = False

    def _changed(self) -> None:
        self.version += 1
        self._cond.notify_all()

    @property
    def position(self) -> float:
        with self._cond:
            return min(self.duration, self._pos + self._elapsed())

    @property
    def played(self) -> float:
        with self._cond:
            return self._played + self._elapsed()

    @property
    def playing(self) -> bool:
        with self._cond:
            if self._playing and self._pos + self._elapsed() >= self.duration:
                self._rebase()
            return self._playing

    @property
    def speed(self) -> float:
        return self._speed

    @property
    def index(self) -> int:
        """The sample shown now: the last one recorded at or before the position."""
        return self.index_at(self.position)

    @property
    def at_end(self) -> bool:
        return self.position >= self.duration

    def index_at(self, seconds: float) -> int:
        return max(0, bisect.bisect_right(self.times, seconds + 1e-9) - 1)

    # -- controls
    def play(self) -> None:
        with self._cond:
            self._rebase()
            if self._pos >= self.duration:
                self._pos = 0.0  # play at the end starts over
            self._playing = self.duration > 0
            self._changed()

    def pause(self) -> None:
        with self._cond:
            self._rebase()
            self._playing = False
            self._changed()

    def toggle(self) -> None:
        if self.playing:
            self.pause()
        else:
            self.play()

    def set_speed(self, speed: float) -> None:
        if not speed > 0:
            raise ValueError(f"speed must be positive, not {speed!r}")
        with self._cond:
            self._rebase()
            self._speed = float(speed)
            self._changed()

    def seek(self, seconds: float) -> None:
        """Go to ``seconds`` from the start of the log (clamped); playing stays as it was."""
        with self._cond:
            self._rebase()
            self._pos = min(max(0.0, seconds), self.duration)
            self._changed()

    def skip(self, seconds: float) -> None:
        self.seek(self.position + seconds)

    def step(self, n: int = 1) -> None:
        """Pause and move ``n`` samples forward (negative: back)."""
        with self._cond:
            self._rebase()
            self._playing = False
            if self.times:
                i = max(0, bisect.bisect_right(self.times, self._pos + 1e-9) - 1)
                self._pos = self.times[min(len(self.times) - 1, max(0, i + n))]
            self._changed()

    def wait_change(self, version: int, timeout: float) -> bool:
        with self._cond:
            if self.version == version:
                self._cond.wait(timeout)
            return self.version != version


class ReplayClock(Clock):
    """Time as the player sees it: ``monotonic`` is log time played, ``wall`` the log's clock."""

    POLL_S = 0.05  # how often a wait looks at its event (the player wakes it at once)

    def __init__(self, player: Player, start: float) -> None:
        self.player = player
        self.start = start

    def monotonic(self) -> float:
        return self.player.played

    def wall(self) -> float:
        return self.start + self.player.position

    def sleep(self, seconds: float) -> None:
        self.wait(threading.Event(), seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Wait ``seconds`` of played log time; returns early (False) when the player changes."""
        player = self.player
        target = player.played + max(0.0, seconds)
        version = player.version
        while True:
            if event.is_set():
                return True
            if player.version != version:
                return False
            left = target - player.played
            if left <= 1e-9:
                return False
            real_left = left / player.speed if player.playing else self.POLL_S
            if player.wait_change(version, min(self.POLL_S, real_left)):
                return False


# ---------------------------------------------------------------- backend


def read_log_text(path: str) -> str:
    """A log's text, bounded: only a regular file (its size bounds it; /dev/zero or a FIFO has
    no end, a folder no text), each line at most MAX_LINE_BYTES. Errors are one line."""
    try:
        raw = userfile.open_regular(path)
    except FileNotFoundError:
        raise BackendError(f"cannot read log {path}: no such file") from None
    except userfile.FileProblem as exc:
        raise BackendError(f"cannot read log {path}: {exc}") from None
    with raw:
        lines = []
        try:
            for number, line in enumerate(iter(lambda: raw.readline(MAX_LINE_BYTES + 1), b""),
                                          1):
                if len(line) > MAX_LINE_BYTES:
                    raise LogFormatError(f"{path}:{number}: a line longer than "
                                         f"{MAX_LINE_BYTES >> 20} MiB is not a log row")
                lines.append(line)
        except OSError as exc:
            raise BackendError(f"cannot read log {path}: {exc.strerror or exc}") from None
    return b"".join(lines).decode("utf-8", "surrogateescape")


class ReplayBackend(Backend):
    name = "replay"
    capabilities = frozenset({CAP_PROCESSES})

    def __init__(self, options: BackendOptions) -> None:
        if not options.replay:
            raise BackendUnavailable("the replay backend needs a log: --replay FILE")
        self.path = options.replay
        self.speed = options.sim_speed
        self.log: Log | None = None
        self._samples: list[Snapshot] = []
        self._info: NodeInfo | None = None
        self.player: Player | None = None
        self.clock: Clock = REAL_CLOCK  # the player's clock once open()

    def open(self) -> None:
        where = self.path
        text = read_log_text(self.path)
        try:
            mtime = os.stat(self.path).st_mtime
        except OSError:
            mtime = 0.0
        if smi_capture.kind(text) is not None:
            self._open_capture(text, mtime)
            return
        log = parse_log(text, where)
        samples = build_samples(log, where, end_time=mtime)
        host = os.path.basename(self.path)
        driver = next((r.cells["driver_version"] for r in log.rows[:1]
                       if not r.cells.get("driver_version", "[").startswith("[")), None)
        self._samples = [
            Snapshot(host=host, time=s.time, backend=self.name, devices=tuple(s.devices),
                     driver_version=driver)
            for s in samples
        ]
        self.log = log
        start = samples[0].time if samples else 0.0
        times, last = [], 0.0
        for s in samples:  # a clock stepping back (NTP, DST) must not reorder the log
            last = max(last, s.time - start)
            times.append(last)
        self.player = Player(times, speed=self.speed)
        self.clock = ReplayClock(self.player, start)
        self._info = NodeInfo(host=host, backend=self.name, driver_version=driver,
                              devices=self._device_infos())

    def _open_capture(self, text: str, mtime: float) -> None:
        """A real nvidia-smi capture (the table, -L, -q, -q -x): one sample, its node."""
        try:
            capture = smi_capture.read(text)
        except smi_capture.CaptureError as exc:
            raise LogFormatError(f"{self.path}: {exc}") from None
        host = os.path.basename(self.path)
        when = capture.time if capture.time is not None else mtime
        self._samples = [Snapshot(host=host, time=when, backend=self.name,
                                  devices=capture.devices, driver_version=capture.driver_version,
                                  cuda_version=capture.cuda_version)]
        self.player = Player([0.0], speed=self.speed)
        self.clock = ReplayClock(self.player, when)
        self._info = NodeInfo(host=host, backend=self.name, driver_version=capture.driver_version,
                              cuda_version=capture.cuda_version, devices=self._device_infos())

    def _device_infos(self) -> tuple[DeviceInfo, ...]:
        seen: dict[int, DeviceInfo] = {}
        for snap in self._samples:
            for d in snap.devices:
                if d.index not in seen:
                    seen[d.index] = DeviceInfo(
                        index=d.index, uuid=d.uuid, name=d.name, vendor=d.vendor,
                        pci_bus_id=d.pci_bus_id, memory_total_mib=d.memory_total_mib,
                        power_limit_default_w=d.power_limit_default_w,
                        power_limit_min_w=d.power_limit_min_w,
                        power_limit_max_w=d.power_limit_max_w,
                        clock_sm_max_mhz=d.clock_sm_max_mhz, clock_mem_max_mhz=d.clock_mem_max_mhz)
        return tuple(seen[i] for i in sorted(seen))

    def info(self) -> NodeInfo:
        if self._info is None:
            raise BackendError("replay backend not open")
        return self._info

    def __len__(self) -> int:
        return len(self._samples)

    def snapshot(self, i: int, devices: Sequence[int] | None = None) -> Snapshot:
        """The i-th recorded sample (of the chosen device indices, in that order)."""
        snap = self._samples[i]
        if devices is None:
            return snap
        by_index: dict[int, list[Device]] = {}
        for d in snap.devices:
            by_index.setdefault(d.index, []).append(d)
        chosen = tuple(d for i in devices for d in by_index.get(i, ()))
        return Snapshot(host=snap.host, time=snap.time, backend=snap.backend, devices=chosen,
                        driver_version=snap.driver_version, cuda_version=snap.cuda_version)

    def sample(self, devices: Sequence[int] | None = None, *,
               wants: Wants | None = EVERYTHING) -> Snapshot:
        if self.player is None:
            raise BackendError("replay backend not open")
        if not self._samples:
            return Snapshot(host=self.info().host, time=self.clock.wall(), backend=self.name)
        return self.snapshot(self.player.index, devices)
