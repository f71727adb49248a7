"""`gputop --query-gpu=FIELDS --format=csv [-l SEC | -lms MS] [-f FILE] [-i IDS]`.

nvidia-smi's query mode, flag for flag, on any backend. Exit codes: 0 success; 2 a bad field (with
nvidia-smi's own message on stdout and exit code) or another bad argument (nvidia-smi's "invalid
argument" code); 1 a log that cannot be written; where no device answers, nvidia-smi's own code
for the reason (12 no NVML library, 9 driver not loaded, …: gputop.backends.open_backend), never
simulated rows.

A loop (-l/-lms) ends on Ctrl-C, SIGTERM or SIGHUP with the current sample's rows finished, the
signal handlers restored, and exit 0. nvidia-smi documents Ctrl+C as the way to end its loop ("probe
until Ctrl+C"), so ending it is success, not an interruption; SIGTERM (systemd, kill) and SIGHUP
(the SSH session dropped) are the same request from elsewhere, and the log is complete in all three.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputop.commands.common import add_common_arguments, bounded, source_config
from gputop.config.options import SourceConfig
from gputop.core import bounds
from gputop.core.errors import UsageError

if TYPE_CHECKING:
    from gputop.formats.query_fields import Field

FORMAT_HELP = "csv[,noheader][,nounits]"
DEFAULT_LOOP_S = 5.0  # nvidia-smi's interval for a bare -l


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one clear line, not usage + error
        raise UsageError(message)


@dataclass(frozen=True)
class QueryConfig:
    """One query, checked: what to read, how to write it, how often, and where."""

    source: SourceConfig
    query: str  # gpu, compute-apps or accounted-apps
    fields: tuple[Field, ...]  # in the order asked for, repeats kept
    header: bool = True
    units: bool = True
    interval: float | None = None  # seconds between rows; None: one query
    filename: str | None = None  # -f FILE; None: stdout


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gputop", allow_abbrev=False,
                description="nvidia-smi compatible query mode: CSV rows of GPU fields.")
    add_common_arguments(p)
    q = p.add_mutually_exclusive_group()
    q.add_argument("--query-gpu", metavar="FIELDS", help="GPU fields (see --help-query-gpu)")
    q.add_argument("--query-compute-apps", metavar="FIELDS",
                   help="compute process fields (see --help-query-compute-apps)")
    q.add_argument("--query-accounted-apps", metavar="FIELDS",
                   help="accounted process fields (only replayed logs hold any)")
    q.add_argument("--help-query-gpu", action="store_true", help="list the --query-gpu fields")
    q.add_argument("--help-query-compute-apps", action="store_true",
                   help="list the --query-compute-apps fields")
    p.add_argument("--format", metavar="OPTS", help=f"output format: {FORMAT_HELP} (mandatory)")
    loop = p.add_mutually_exclusive_group()
    loop.add_argument("-l", "--loop", nargs="?", const=str(DEFAULT_LOOP_S), metavar="SEC",
                      type=bounded(bounds.LOOP_S),
                      help=f"probe until Ctrl+C every SEC seconds (bare -l: 5;"
                           f" {bounds.LOOP_S.describe()})")
    loop.add_argument("-lms", "--loop-ms", metavar="MS", type=bounded(bounds.LOOP_MS),
                      help=f"probe until Ctrl+C every MS milliseconds ({bounds.LOOP_MS.describe()})")
    p.add_argument("-f", "--filename", metavar="FILE", help="write to FILE (truncated) instead of stdout")
    return p


def parse_format(text: str | None, query_flag: str) -> tuple[bool, bool]:
    """``csv,noheader`` -> (header, units)."""
    if text is None:
        raise UsageError(f"{query_flag} needs --format={FORMAT_HELP}")
    opts = [o.strip() for o in text.split(",")]
    bad = [o for o in opts if o not in ("csv", "noheader", "nounits")]
    if bad:
        raise UsageError(f"invalid --format option {bad[0]!r} (expected {FORMAT_HELP})")
    if "csv" not in opts:
        raise UsageError(f"--format must include csv (expected {FORMAT_HELP})")
    return "noheader" not in opts, "nounits" not in opts


def parse_interval(args: argparse.Namespace) -> float | None:
    """Seconds between rows (already checked against their bounds), or None for a single query."""
    if args.loop is not None:
        return float(args.loop)
    if args.loop_ms is not None:
        return args.loop_ms / 1000.0
    return None


def help_text(which: str) -> str:
    from importlib.resources import files

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    data = tomllib.loads(files("gputop").joinpath("data/nvidia-smi-help.toml").read_text("utf-8"))
    return data[which]


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    if args.help_query_gpu:
        sys.stdout.write(help_text("query_gpu"))
        sys.stdout.flush()
        return 0
    if args.help_query_compute_apps:
        sys.stdout.write(help_text("query_compute_apps"))
        sys.stdout.flush()
        return 0

    from gputop.formats.query_fields import InvalidField, parse_field_list

    chosen = [(q, flag, text) for q, flag, text in (
        ("gpu", "--query-gpu", args.query_gpu),
        ("compute-apps", "--query-compute-apps", args.query_compute_apps),
        ("accounted-apps", "--query-accounted-apps", args.query_accounted_apps),
    ) if text is not None]
    if not chosen:  # unreachable through gputop.commands.main, which dispatches here only for a query flag
        raise UsageError("query mode needs --query-gpu=FIELDS or --query-compute-apps=FIELDS")
    query, flag, text = chosen[0]
    try:
        fields = parse_field_list(text, query)
    except InvalidField as exc:
        # nvidia-smi: the message and a blank line on stdout, exit 2
        sys.stdout.write(f"{exc}\n\n")
        sys.stdout.flush()
        return 2
    header, units = parse_format(args.format, flag)
    interval = parse_interval(args)
    return run_query(QueryConfig(source=source_config(args), query=query, fields=tuple(fields),
                                 header=header, units=units, interval=interval,
                                 filename=args.filename))


def run_query(config: QueryConfig) -> int:
    from gputop.backends import open_backend
    from gputop.core.selection import select_devices
    from gputop.formats.query_csv import header_line
    from gputop.query.sink import FileSink, StreamSink

    source = config.source
    backend = open_backend(source.backend, source.options, one_vendor=True)
    try:
        info = backend.info()
        devices = select_devices(source.ids, info.devices)
        sink = FileSink(config.filename) if config.filename else StreamSink(sys.stdout)
        try:
            if config.header:
                sink.write_header(header_line(config.fields))
            logger = QueryLogger(backend, config.query, config.fields, config.units, devices,
                                 len(info.devices), sink)
            if backend.player is not None:  # a log: its samples, not the clock, set the rows
                logger.replay(config.interval)
            elif config.interval is None:
                logger.once()
            else:
                logger.loop(config.interval)
        finally:
            sink.close()
    finally:
        backend.close()
    return 0


class _Stop(BaseException):
    """Raised by a signal handler to leave a wait; never while a row is being written."""


class QueryLogger:
    """Samples a backend on a drift-free schedule and writes whole rows."""

    def __init__(self, backend, query: str, fields, units: bool, devices: list[int] | None,
                 count: int, sink) -> None:
        self.backend = backend
        self.query = query
        self.fields = fields
        self.units = units
        self.devices = devices
        self.count = count
        self.sink = sink
        # Read only what the fields print: --query-gpu pays for no process list and no GPM.
        from gputop.formats.query_fields import query_wants

        self.wants = query_wants(query, fields)
        self.rows = 0
        self.skipped = 0
        self.stop_signal: int | None = None
        self._critical = False  # the main thread is writing rows: a signal must not cut them
        self._last_error: str | None = None
        self._tick_lock = threading.Lock()

    def _emit(self, snap) -> None:
        from gputop.formats.query_csv import lines_for

        text = lines_for(self.query, self.fields, snap, self.count, self.units)
        if text:
            self.sink.write(text)
            self.rows += text.count("\n")

    def once(self) -> None:
        self._emit(self.backend.sample(self.devices, wants=self.wants))

    def replay(self, interval: float | None) -> None:
        """A replayed log: every recorded sample once, or one per ``interval`` of log time."""
        backend = self.backend
        if interval is None:
            for i in range(len(backend)):
                self._emit(backend.snapshot(i, self.devices))
            return
        player = backend.player
        k = 0
        while k * interval <= player.duration + 1e-9:
            self._emit(backend.snapshot(player.index_at(k * interval), self.devices))
            k += 1

    def _on_signal(self, signum, frame) -> None:
        self.stop_signal = signum
        if not self._critical:
            raise _Stop

    def loop(self, interval: float) -> None:
        """Write a sample every ``interval`` seconds of the backend's clock until a signal (or
        ``stop_signal``) ends it. Ticks are due at start + k * interval, never at "last + interval",
        so a slow tick never shifts the ones after it; ticks that a stall made impossible are
        skipped and counted, not bunched. Two threads wait for each tick (gputop.query.hedge)."""
        from gputop.core.stop_signals import catch, release
        from gputop.query.hedge import hedge_cpus

        clock = self.backend.clock
        previous = catch(self._on_signal)
        self._start = clock.monotonic()
        self._next = 0
        self._stopping = threading.Event()
        self._helper_error: BaseException | None = None
        cpus = hedge_cpus(clock)
        helper = None
        if cpus is not None:
            helper = threading.Thread(target=self._helper, args=(interval, cpus[1]),
                                      name="gputop-query-hedge", daemon=True)
            helper.start()
        try:
            self._wait_and_tick(interval, cpus[0] if cpus else None)
        except _Stop:
            pass
        finally:
            self._stopping.set()
            if helper is not None:
                helper.join(10.0)  # it finishes the rows it is writing, never starts others
            release(previous)
        if self._helper_error is not None:  # a write error met by the other waiter is ours too
            raise self._helper_error

    def _helper(self, interval: float, cpu: int) -> None:
        try:
            self._wait_and_tick(interval, cpu)
        except BaseException as exc:  # handed to the main waiter, which reports it
            self._helper_error = exc
            self._stopping.set()

    def _wait_and_tick(self, interval: float, cpu: int | None) -> None:
        """One waiter: sleep until the next tick is due, and take it unless the other waiter
        already has. The tick runs under the lock, so the rows of one sample are never
        interleaved with another's and a stop waits for them to be whole."""
        from gputop.query.hedge import arm_here
        from gputop.sampler import next_tick

        clock = self.backend.clock
        allowed = os.sched_getaffinity(0) if cpu is not None else set()
        takes_signals = threading.current_thread() is threading.main_thread()
        while self.stop_signal is None and not self._stopping.is_set():
            k = self._next
            if k:
                if not arm_here(cpu, allowed):
                    cpu = None
                clock.wait(self._stopping, self._start + k * interval - clock.monotonic())
            with self._tick_lock:
                if self._next != k or self.stop_signal is not None or self._stopping.is_set():
                    continue  # the other waiter took this tick (or the log is ending)
                self._critical = takes_signals
                try:
                    self._tick()
                finally:
                    self._critical = False
                if k == 0:
                    # What exists after the first row (backend, field table, caches) lives as
                    # long as the log: keep the collector from walking it in every pause.
                    gc.freeze()
                k2, _ = next_tick(self._start, interval, clock.monotonic(), k)
                self.skipped += k2 - k - 1
                self._next = k2

    def _tick(self) -> None:
        from gputop.backends.base import BackendError

        try:
            snap = self.backend.sample(self.devices, wants=self.wants)
        except BackendError as exc:
            # One failed read must not end a long log: say so once, keep the schedule.
            message = str(exc)
            if message != self._last_error:
                print(f"gputop: {message}", file=sys.stderr)
                self._last_error = message
            return
        self._last_error = None
        self._emit(snap)

