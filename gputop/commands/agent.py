"""`gputop agent`: stream this node's snapshots as NDJSON for the cluster view.

The first line is a hello (gputop version, schema, backend, host); then one ``gputop/1`` snapshot
per interval, each flushed on its own line. The agent runs until its stdin reaches EOF (the ssh
session that started it went away) or its stdout closes (EPIPE), and then exits quietly.

It must start fast on a remote node: nothing heavy is imported at module level, and Textual never.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Any, BinaryIO

from gputop import jsonout

HELLO = "gputop"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ignore-stdin", action="store_true",
        help="keep streaming when stdin reaches EOF (default: EOF on stdin stops the agent)")
    parser.add_argument("--count", type=int, default=0, metavar="N",
                        help="stop after N snapshots (default: 0 = until stdin or stdout closes)")


def hello_document(backend: str, host: str) -> dict[str, Any]:
    from gputop import __version__
    from gputop.model import SCHEMA

    return {"hello": HELLO, "version": __version__, "schema": SCHEMA, "backend": backend,
            "host": host}


def encode_line(doc: dict[str, Any]) -> bytes:
    # ensure_ascii keeps every line plain ASCII whatever a process name holds.
    return jsonout.dumps(doc, separators=(",", ":")).encode("ascii") + b"\n"


class _Writer:
    """Writes whole lines to stdout; remembers that the reader went away instead of raising."""

    def __init__(self, out: BinaryIO, done: threading.Event) -> None:
        self.out = out
        self.done = done
        self.lock = threading.Lock()
        self.count = 0

    def write(self, line: bytes) -> bool:
        with self.lock:
            if self.done.is_set():
                return False
            try:
                self.out.write(line)
                self.out.flush()
            except (BrokenPipeError, ConnectionResetError, ValueError, OSError):
                self.done.set()
                return False
            self.count += 1
            return True


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


def run(args: argparse.Namespace) -> int:
    from gputop.analysis.pipeline import default_analyzer
    from gputop.backends import open_backend
    from gputop.cli import backend_options
    from gputop.errors import UsageError
    from gputop.model import snapshot_to_json
    from gputop.sampler import Sampler
    from gputop.selection import select_devices

    if args.count < 0:
        raise UsageError(f"--count must not be negative: {args.count}")
    out = sys.stdout.buffer
    done = threading.Event()
    writer = _Writer(out, done)
    backend = open_backend(args.backend, backend_options(args))
    try:
        info = backend.info()
        devices = select_devices(args.ids, info.devices)
        if not writer.write(encode_line(hello_document(backend.name, info.host))):
            return _quiet_exit()
        sampler = Sampler(backend, interval=args.interval, devices=devices,
                          analyze=default_analyzer())

        def emit(snap) -> None:
            if writer.write(encode_line(snapshot_to_json(snap))) and args.count and \
                    writer.count > args.count:
                done.set()

        def failed(exc: BaseException) -> None:
            # The stream carries snapshots only; a failing backend says so on stderr, which the
            # viewer shows as the node's reason.
            print(f"gputop agent: sampling failed: {exc}", file=sys.stderr, flush=True)

        sampler.subscribe(emit, failed)
        if not args.ignore_stdin:
            threading.Thread(target=_watch_stdin, args=(sys.stdin.fileno(), done),
                             name="gputop-agent-stdin", daemon=True).start()
        sampler.start()
        try:
            done.wait()
        finally:
            sampler.stop()
    finally:
        backend.close()
    return _quiet_exit() if done.is_set() else 0


def _quiet_exit() -> int:
    # stdout may be a closed pipe: swap it for /dev/null so the interpreter's final flush is quiet.
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    except OSError:
        pass
    return 0
