"""A report's records from recordings of the agent stream: `gputop agent > FILE`, or the
dashboard's `r` (its ``.ndjson``). Each file is a hello line, then one ``gputop/1`` snapshot
per line (gputop.formats.agent_stream); several files, or one file of several hosts' lines
(files put end to end, each with its hello), make a cluster.

Empty lines (the agent's keep-alives) are skipped, and so are the keys of a line this reader
does not know (alerts, Xids: the snapshot decoder drops them). Each snapshot is checked and
built by the cluster view's decoder (gputop.cluster.protocol): a file is as untrusted as a
remote agent. Each host's snapshots are folded oldest first through its own idle ledger
(gputop.analysis.waste), which judges each interval as the live ledger does; a snapshot not
newer than its host's last (files that overlap) is not counted twice. Bad input is one
UsageError naming the file and line.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from gputop.analysis.accounting import record
from gputop.analysis.waste import WasteLedger
from gputop.cluster.lines import DEFAULT_MAX_LINE, LineSplitter, Oversize
from gputop.cluster.protocol import build_snapshot, clean_document
from gputop.core.errors import UsageError
from gputop.core.model import SCHEMA, SchemaError
from gputop.core.untrusted import loads, printable
from gputop.formats.agent_stream import HELLO

_CHUNK = 1 << 20
_NOT_OURS = ("not a gputop recording (no gputop hello line before it: record with `gputop agent`"
             " or the dashboard's r, and give its .ndjson)")


@dataclass
class Recorded:
    """What a set of recordings holds: one record per account (job and user) per host, in the
    job ledger's record format plus ``"nodes"``, and what was read."""

    records: list[dict[str, Any]] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    samples: int = 0  # snapshots counted (in range, not repeated)
    first: float | None = None  # the oldest counted snapshot's time
    last: float | None = None  # the newest's


def read_records(paths: Sequence[str], start: float | None = None,
                 stop: float | None = None) -> Recorded:
    """Fold the snapshots of ``paths`` from ``start`` to ``stop`` (either None: open) into
    per-host ledgers and return their accounts as records: the intervals whose newer sample
    lies in the range, so that adjacent ranges add up (each host's newest snapshot at or
    before ``start`` is the first interval's older end). Raise UsageError for a file that
    cannot be read, a line that is not a hello or a valid snapshot, or files with no
    snapshot in the range."""
    ledgers: dict[str, WasteLedger] = {}
    newest: dict[str, float] = {}  # per host, the newest snapshot counted
    before: dict[str, dict[str, Any]] = {}  # per host, the newest snapshot before ``start``
    out = Recorded()
    # oldest file first, so that one host's recording split over files is read in order
    for path in sorted(paths, key=_first_time):
        seen = 0
        for doc in _documents(path):
            seen += 1
            t = doc["time"]
            host = doc["host"]
            if start is not None and t <= start:
                if t > before.get(host, {"time": -math.inf})["time"]:
                    before[host] = doc
                continue
            if (stop is not None and t > stop) or t <= newest.get(host, -math.inf):
                continue  # past the range; or files that overlap: counted once
            ledger = ledgers.get(host)
            if ledger is None:
                # the whole recording: no account is let go, however long ago it ended
                ledger = ledgers[host] = WasteLedger(retention_s=math.inf)
                if host in before:
                    # the interval the range starts in is judged by its first sample, from
                    # the one before: the range counts the intervals ending in it
                    base = before[host]
                    ledger.add(build_snapshot(base))
                    out.samples += 1
                    out.first = base["time"] if out.first is None else min(out.first, base["time"])
            ledger.add(build_snapshot(doc))
            newest[host] = t
            out.samples += 1
            out.first = t if out.first is None else min(out.first, t)
            out.last = t if out.last is None else max(out.last, t)
        if not seen:
            raise UsageError(f"{path}: no snapshot (the recording stopped before its first"
                             " sample)")
    if not ledgers:
        raise UsageError(f"{describe(paths)}: no snapshot in the range asked for")
    for host in sorted(ledgers):
        for acct in ledgers[host].accounts.accounts.values():
            out.records.append({**record([acct]), "nodes": [host]})
    out.hosts = sorted(ledgers)
    return out


def newest_time(paths: Sequence[str]) -> float | None:
    """Return the time of the newest snapshot that ends one of ``paths`` (what a duration such
    as ``--since 2h`` counts back from), reading only each file's last line; None where none
    ends in a snapshot. A line that does not read is left to :func:`read_records` to name."""
    newest = None
    for path in paths:
        line = _last_line(path)
        try:
            doc = loads(line) if line else None
        except (ValueError, RecursionError):
            continue
        t = doc.get("time") if isinstance(doc, dict) else None
        if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t):
            newest = t if newest is None else max(newest, float(t))
    return newest


def _first_time(path: str) -> float:
    """Return the time of the first snapshot of ``path`` (inf where it has none)."""
    return next((float(doc["time"]) for doc in _documents(path)), math.inf)


def _documents(path: str) -> Iterator[dict[str, Any]]:
    """Yield the checked snapshot documents of ``path``, in file order."""
    helloed = False
    for number, line in _lines(path):
        if isinstance(line, Oversize):
            raise _bad(path, number, f"a line of {line.size:,} bytes, over the "
                                     f"{DEFAULT_MAX_LINE // (1 << 20)} MiB a line may hold")
        line = line.strip()
        if not line:
            continue  # the agent's keep-alive
        try:
            doc = loads(line)
        except (ValueError, RecursionError) as exc:
            if not helloed:
                raise _bad(path, number, _NOT_OURS) from None
            raise _bad(path, number, f"not JSON: {printable(str(exc), 120)}") from None
        if isinstance(doc, dict) and doc.get("hello") == HELLO:
            if doc.get("schema") != SCHEMA:
                raise _bad(path, number, f"recorded by a gputop that speaks "
                                         f"{printable(str(doc.get('schema')), 40)!r}; this one "
                                         f"reads {SCHEMA!r}")
            helloed = True
            continue
        if not helloed:
            raise _bad(path, number, _NOT_OURS)
        try:
            yield clean_document(doc)
        except (SchemaError, TypeError, ValueError) as exc:
            raise _bad(path, number, f"not a valid snapshot: {printable(str(exc), 200)}") \
                from None


def _lines(path: str) -> Iterator[tuple[int, bytes | Oversize]]:
    """Yield ``path``'s lines, numbered from 1, each at most DEFAULT_MAX_LINE bytes."""
    splitter = LineSplitter()
    number = 0
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                for line in splitter.feed(chunk):
                    number += 1
                    yield number, line
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    for line in splitter.close():
        number += 1
        yield number, line


def _last_line(path: str) -> bytes:
    """Return the last line of ``path`` that is not empty (b"" where there is none)."""
    try:
        with open(path, "rb") as fh:
            end = fh.seek(0, os.SEEK_END)
            tail = b""
            while end > 0 and len(tail) <= DEFAULT_MAX_LINE:
                step = min(_CHUNK, end)
                end -= step
                fh.seek(end)
                tail = fh.read(step) + tail
                lines = [x for x in tail.split(b"\n") if x.strip()]
                # a whole line: one before it in the tail, or the file's start reached
                if len(lines) > 1 or (lines and end == 0):
                    return lines[-1]
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    return b""


def _bad(path: str, number: int, what: str) -> UsageError:
    return UsageError(f"{path}:{number}: {what}")


def describe(paths: Sequence[str]) -> str:
    """Name the files ``paths`` in a line: each, or the first and how many more."""
    return ", ".join(paths) if len(paths) <= 3 else f"{paths[0]} and {len(paths) - 1} more files"
