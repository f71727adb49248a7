"""`gputop agent`: stream this node's snapshots as NDJSON for the cluster view.

The first line is a hello (gputop version, schema, the backend asked for, host), written before
the backend opens: a first `npu-smi` read can take seconds, and the viewer must know at once that
the agent runs. Until the first snapshot, an empty line every second keeps the stream alive (the
viewer skips empty lines). Then one ``gputop/1`` snapshot per interval, each flushed on its own
line, with ``jobs_ended``: the accounting of each job whose last process left at that sample
(gputop.analysis.accounting; ``[]`` mostly). With ``--alerts FILE`` (a settings file; the agent reads none otherwise) it evaluates that
file's alert rules on each snapshot and adds the alerts it fired or resolved to the line, as an
``alerts`` list beside the snapshot (each as `Alert.to_json` writes it): a viewer that does not
know the key ignores it. The agent keeps the file's journal, so a new session re-fires nothing,
and delivers to no channel: whoever reads the stream does. The agent runs until its stdin reaches EOF (the ssh session that started it went away) or
its stdout closes (EPIPE), and then exits quietly; SIGTERM, SIGHUP and Ctrl-C end it too (exit
128 + signal), the backend's child processes killed first, also during that first slow read. A
stdout that fails otherwise (a full disk: ENOSPC) is one line on stderr and exit 1.

It must start fast on a remote node: nothing heavy is imported at module level, and Textual never.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from gputop.commands.common import bounded, source_config
from gputop.config.options import SourceConfig
from gputop.formats.agent_stream import encode_line, hello_document

if TYPE_CHECKING:
    from gputop.alerts.runtime import AlertConfig

KEEPALIVE_S = 1.0
_GONE = (BrokenPipeError, ConnectionResetError)  # the reader went away: not an error


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ignore-stdin", action="store_true",
        help="keep streaming when stdin reaches EOF (default: EOF on stdin stops the agent)")
    from gputop.core.bounds import AGENT_COUNT

    parser.add_argument("--count", type=bounded(AGENT_COUNT), default=0, metavar="N",
                        help="stop after N snapshots (default: 0 = until stdin or stdout closes)")
    parser.add_argument("--alerts", metavar="FILE", default=None,
                        help="evaluate the alert rules of this settings file and add the alerts"
                             " each snapshot fires or resolves to its line (no channel is sent to)")


@dataclass(frozen=True)
class AgentConfig:
    source: SourceConfig
    ignore_stdin: bool = False  # keep streaming when stdin reaches EOF
    count: int = 0  # stop after this many snapshots; 0: until stdin or stdout closes
    alerts: str | None = None  # the settings file whose [alerts] rules the agent evaluates


def configure(args: argparse.Namespace) -> AgentConfig:
    return AgentConfig(source=source_config(args), ignore_stdin=args.ignore_stdin,
                       count=args.count, alerts=args.alerts)


class _Writer:
    """Writes whole lines to stdout; remembers that the reader went away (or that stdout failed,
    in ``error``) instead of raising."""

    def __init__(self, out: BinaryIO, done: threading.Event) -> None:
        self.out = out
        self.done = done
        self.lock = threading.Lock()
        self.count = 0
        self.error: OSError | None = None

    def write(self, line: bytes) -> bool:
        with self.lock:
            if self.done.is_set():
                return False
            try:
                self.out.write(line)
                self.out.flush()
            except _GONE + (ValueError,):
                self.done.set()
                return False
            except OSError as exc:
                self.error = exc
                self.done.set()
                return False
            self.count += 1
            return True


class _Stopped(BaseException):
    """Raised in the main thread by a stop signal while the backend is still opening."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _watch_stdin(fd: int, done: threading.Event) -> None:
    """Set ``done`` at EOF on stdin: the ssh session that runs us has closed.

    Reads the raw descriptor: a daemon thread blocked inside sys.stdin's buffered reader holds its
    lock, and the interpreter aborts at exit when it cannot take that lock."""
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass
    done.set()


def _keep_alive(writer: _Writer, started: threading.Event) -> None:
    while not started.wait(KEEPALIVE_S):
        if not writer.write(b"\n"):
            return


def run(config: AgentConfig) -> int:
    from gputop.backends.base import hostname
    from gputop.core import stop_signals

    rules = _alert_rules(config.alerts)  # a bad file: one line and exit 2, before the hello
    done = threading.Event()
    writer = _Writer(sys.stdout.buffer, done)
    opening = threading.Event()
    opening.set()
    signalled: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        signalled.append(signum)
        done.set()
        if opening.is_set():
            opening.clear()
            raise _Stopped(signum)  # out of the slow read: its finally kills the child

    previous = stop_signals.catch(on_signal)
    try:
        if not writer.write(encode_line(hello_document(config.source.backend, hostname()))):
            return _exit(writer)
        if not config.ignore_stdin:
            threading.Thread(target=_watch_stdin, args=(sys.stdin.fileno(), done),
                             name="gputop-agent-stdin", daemon=True).start()
        started = threading.Event()
        threading.Thread(target=_keep_alive, args=(writer, started), name="gputop-agent-alive",
                         daemon=True).start()
        try:
            _stream(config, writer, done, opening, started, rules)
        except _Stopped:
            pass
    finally:
        stop_signals.release(previous)
    if signalled:
        _exit(writer)
        return 128 + signalled[0]
    return _exit(writer)


def _alert_rules(path: str | None) -> AlertConfig | None:
    """Check the ``[alerts]`` table of the settings file ``path`` (None: no alerts), with its
    channels left out: the agent only says what fired."""
    if path is None:
        return None
    from dataclasses import replace

    from gputop.alerts.runtime import from_settings

    return replace(from_settings(path, False), channels=())


def _stream(config: AgentConfig, writer: _Writer, done: threading.Event,
            opening: threading.Event, started: threading.Event,
            rules: AlertConfig | None = None) -> None:
    from gputop.analysis.pipeline import default_analyzer
    from gputop.analysis.waste import WasteLedger
    from gputop.analysis.xid import XidLog
    from gputop.backends import open_backend
    from gputop.core.model import snapshot_to_json
    from gputop.core.selection import select_devices
    from gputop.sampler import Sampler

    source = config.source
    backend = open_backend(source.backend, source.options)
    try:
        info = backend.info()
        devices = select_devices(source.ids, info.devices)
        if not opening.is_set():
            return  # a signal came as the backend finished opening
        opening.clear()
        # each process's idle-allocated time and energy so far, in the stream, and each job's
        # accounting when its last process leaves (docs/waste.md)
        ledger = WasteLedger()
        sampler = Sampler(backend, interval=source.interval, devices=devices,
                          analyze=default_analyzer(), annotate=ledger.annotate)
        xids = XidLog(size=1)  # only to tie each Xid to the processes of the sample before
        alerting = None
        if rules is not None:
            from gputop.alerts.runtime import Alerting

            alerting = Alerting(rules, on_error=lambda text: print(
                f"gputop agent: {text}", file=sys.stderr, flush=True))

        def emit(snap) -> None:
            doc = snapshot_to_json(snap)
            # the Xids this sample brought, explained (the devices carry them raw)
            doc["xid_events"] = [e.to_json() for e in xids.add(snap)]
            doc["jobs_ended"] = ledger.accounts.drain_ended()
            if alerting is not None:  # the alerts this sample fired or resolved
                doc["alerts"] = [a.to_json() for a in alerting.observe(snap)]
            try:
                line = encode_line(doc)
            except ValueError as exc:  # a non-finite number: never sent as "NaN"
                print(f"gputop agent: snapshot not sent: {exc}", file=sys.stderr, flush=True)
                return
            started.set()
            if writer.write(line) and config.count and writer.count > config.count:
                done.set()

        def failed(exc: BaseException) -> None:
            # The stream carries snapshots only; a failing backend says so on stderr, which the
            # viewer shows as the node's reason.
            print(f"gputop agent: sampling failed: {exc}", file=sys.stderr, flush=True)

        sampler.subscribe(emit, failed)
        sampler.start()
        try:
            done.wait()
        finally:
            sampler.stop()
    finally:
        opening.clear()
        backend.close()


def _exit(writer: _Writer) -> int:
    # stdout may be a closed pipe or a full disk: swap it for /dev/null so the interpreter's
    # final flush is quiet.
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    except OSError:
        pass
    if writer.error is not None:
        print(f"gputop agent: cannot write to stdout: {writer.error.strerror or writer.error}",
              file=sys.stderr, flush=True)
        return 1
    return 0
