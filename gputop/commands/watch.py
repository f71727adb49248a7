"""`gputop watch`: the alert rules at work with no screen, for systemd or any supervisor.

It reads the rules and channels from the settings file as ``gputop alerts`` does (``--config``,
``$GPUTOP_CONFIG``, ``--no-config``) and checks them, and the log file, before any device
opens: a bad one is one line and exit 2. Then it samples the backend every ``--interval``
and hands each snapshot to one `gputop.alerts.runtime.Alerting`, which journals each alert,
and queues it for its channels; delivery runs on the channels' own threads and never holds
up a sample.

It logs one line per alert fired or resolved, and per delivery problem (an alert given up,
dropped from a full queue, lost at exit), to stderr or, with ``--log FILE``, appended to that
file as whole lines after a timestamp. Under systemd (stderr is the journal: ``$JOURNAL_STREAM``
names it) each line starts with its syslog priority (``<2>`` a critical alert fired, ``<4>`` a
warning, …), which systemd's ``SyslogLevelPrefix=`` (on by default) turns into the entry's
priority and strips.

SIGTERM, SIGINT and SIGHUP end it: sampling stops, the channels get
`gputop.alerts.runtime.CLOSE_DEADLINE_S` to deliver what they hold, and it exits 0. A backend
that cannot open is one line and a non-zero exit, so that ``Restart=on-failure`` applies. It
never falls back to the simulator: ``--backend sim`` is asked for by name or not at all.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from gputop.commands.common import source_config
from gputop.config.options import SourceConfig
from gputop.core.errors import UsageError

if TYPE_CHECKING:
    from gputop.alerts.model import Alert
    from gputop.alerts.notify.dispatch import DeliveryEvent

PREFIX = "gputop watch: "
# The delivery events a person must hear of: the others (delivered, a retry that may yet
# succeed) are in the channels' counts.
LOGGED_EVENTS = ("gave-up", "dropped", "lost")
# sd-daemon(3)'s priorities: what an alert's line is worth in the journal.
SD_CRIT, SD_ERR, SD_WARNING, SD_NOTICE, SD_INFO = 2, 3, 4, 5, 6
_FIRING = {"critical": SD_CRIT, "warning": SD_WARNING, "info": SD_INFO}
JOURNAL_STREAM = "JOURNAL_STREAM"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("watch")
    # SUPPRESS: `gputop --config F watch` keeps the value the top level parsed.
    g.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS,
                   help="the settings file with the [alerts] rules and channels (default:"
                        " $GPUTOP_CONFIG, else $XDG_CONFIG_HOME/gputop/config.toml)")
    g.add_argument("--no-config", action="store_true", default=argparse.SUPPRESS,
                   help="ignore the settings file: the shipped rules alone, no channels")
    g.add_argument("--log", metavar="FILE", default=None,
                   help="append the log lines to FILE, each after its time (default: stderr,"
                        " which systemd keeps in its journal)")


@dataclass(frozen=True)
class WatchConfig:
    source: SourceConfig
    config: str | None = None  # --config's value
    no_config: bool = False
    log: str | None = None  # None: stderr


def configure(args: argparse.Namespace) -> WatchConfig:
    return WatchConfig(source=source_config(args), config=args.config,
                       no_config=bool(args.no_config), log=args.log)


def priority(alert: Alert) -> int:
    """Return the syslog priority of ``alert``'s line: its severity when it fires; a notice
    when it resolves."""
    return _FIRING[alert.severity] if alert.state == "firing" else SD_NOTICE


def alert_line(alert: Alert) -> str:
    """Return the one line logged for ``alert``: its state, severity, key and summary."""
    from gputop.core.userfile import one_line

    return one_line(f"alert {alert.state} ({alert.severity}) {alert.key}: {alert.summary}")


def to_journal(environ: Mapping[str, str], fd: int) -> bool:
    """Whether ``fd`` is the journal's stream, as systemd's ``$JOURNAL_STREAM`` (``DEV:INO``)
    names it: only then does a ``<N>`` prefix mean a priority rather than text."""
    value = environ.get(JOURNAL_STREAM, "")
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    return value == f"{st.st_dev}:{st.st_ino}"


class Log:
    """Whole lines to stderr (with a ``<N>`` priority where it is the journal) or appended to
    a file (each after its local time); safe from any thread. A file that fails (a full disk)
    is said once on stderr, and its lines go there instead."""

    def __init__(self, path: str | None, stderr: TextIO,
                 environ: Mapping[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._stderr = stderr
        self._fd: int | None = None
        self.path = path
        if path is not None:
            try:
                self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                                   0o640)
            except OSError as exc:
                raise UsageError(f"--log: cannot open {path}: {exc.strerror or exc}") from None
        env = os.environ if environ is None else environ
        try:
            fd = stderr.fileno()
        except (OSError, ValueError):  # a test's StringIO
            fd = -1
        self._journal = path is None and to_journal(env, fd)

    def line(self, text: str, level: int = SD_INFO) -> None:
        with self._lock:
            if self._fd is not None:
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
                try:
                    os.write(self._fd, f"{stamp} {PREFIX}{text}\n".encode())
                    return
                except OSError as exc:
                    os.close(self._fd)
                    self._fd = None
                    self._say(f"cannot write --log {self.path}: {exc.strerror or exc}; "
                              "logging here instead", SD_ERR)
            self._say(text, level)

    def _say(self, text: str, level: int) -> None:
        head = f"<{level}>" if self._journal else ""
        try:
            self._stderr.write(f"{head}{PREFIX}{text}\n")
            self._stderr.flush()
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class _Stopped(BaseException):
    """Raised in the main thread by a stop signal while the backend is still opening."""


def run(config: WatchConfig, stderr: TextIO | None = None) -> int:
    """Watch until a stop signal; see the module's docstring."""
    from gputop.alerts.runtime import Alerting, from_settings
    from gputop.core import stop_signals

    alerts = from_settings(config.config, config.no_config)  # exit 2 before any device
    log = Log(config.log, stderr or sys.stderr)
    try:
        def on_event(event: DeliveryEvent) -> None:
            if event.kind in LOGGED_EVENTS:
                log.line(event.message, SD_ERR if event.kind != "dropped" else SD_WARNING)

        alerting = Alerting(alerts, on_event=on_event,
                            on_error=lambda text: log.line(text, SD_ERR))
        done = threading.Event()
        opening = threading.Event()
        opening.set()
        stopped: list[int] = []

        def on_signal(signum: int, frame: object) -> None:
            stopped.append(signum)
            done.set()
            if opening.is_set():
                opening.clear()
                raise _Stopped  # out of a slow first read: its finally closes the backend

        previous = stop_signals.catch(on_signal)
        try:
            _watch(config.source, alerting, log, done, opening)
        except _Stopped:
            pass
        finally:
            stop_signals.release(previous)
            alerting.close()
        if stopped:
            log.line(f"stopped by signal {stopped[0]}")
        return 0
    finally:
        log.close()


def _watch(source: SourceConfig, alerting, log: Log, done: threading.Event,
           opening: threading.Event) -> None:
    from gputop.analysis.pipeline import default_analyzer
    from gputop.backends import open_backend
    from gputop.core.selection import select_devices
    from gputop.sampler import Sampler

    backend = open_backend(source.backend, source.options)  # never the simulator unasked
    try:
        devices = select_devices(source.ids, backend.info().devices)
        if not opening.is_set():
            return  # a signal came as the backend finished opening
        opening.clear()
        config = alerting.config
        channels = ", ".join(alerting.dispatcher.channels) or "none"
        journal = str(config.journal) if config.journal is not None else "none"
        log.line(f"watching {backend.name} every {source.interval:g} s: {len(config.rules)} "
                 f"rule(s), channels: {channels}, journal {journal}")
        for skipped in alerting.skipped:
            log.line(skipped, SD_WARNING)
        failing: list[str] = []

        def observe(snap) -> None:
            failing.clear()
            for alert in alerting.observe(snap):
                log.line(alert_line(alert), priority(alert))

        def failed(exc: BaseException) -> None:
            text = f"sampling failed: {exc}"
            if failing != [text]:  # once per cause, not once per tick
                failing[:] = [text]
                log.line(text, SD_ERR)

        sampler = Sampler(backend, interval=source.interval, devices=devices,
                          analyze=default_analyzer())
        sampler.subscribe(observe, failed)
        sampler.start()
        try:
            done.wait()
        finally:
            sampler.stop()
    finally:
        opening.clear()
        backend.close()
