"""The journal of original power limits, and the guard that always puts them back.

Before the first change the original limits are written (atomically, fsync'd, the folder too)
to ``$XDG_STATE_HOME/gputop/`` (else ``~/.local/state/gputop/``), one file per host, backend and
set of device UUIDs. The file is removed only once every limit reads back as its original, so a
run killed by SIGKILL or a power cut leaves it behind for the next start to notice and for
``gputop advise --restore`` to act on.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputop.advisor.journal_files import PREFIX, journal_files, state_dir
from gputop.backends.base import Backend, BackendError
from gputop.core import jsonout, userfile
from gputop.core.bounds import as_written, json_type
from gputop.core.errors import GputopError

SCHEMA = "gputop-advise-journal/1"
_KEYS = ("schema", "host", "backend", "pid", "started", "devices")  # all that write() writes
_DEVICE_KEYS = ("index", "uuid", "original_limit_w")


@dataclass(frozen=True)
class JournalEntry:
    index: int
    uuid: str | None
    original_w: float


@dataclass(frozen=True)
class Journal:
    path: Path
    host: str
    backend: str
    pid: int
    started: float
    entries: tuple[JournalEntry, ...]

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))
        gpus = ", ".join(f"GPU {e.index} {e.original_w:g} W" for e in self.entries)
        return f"started {when} by pid {self.pid}; original limits: {gpus}"

    def alive(self) -> bool:
        """Is the run that wrote it still going (a gputop process with that pid on this host)?"""
        if self.pid == os.getpid():
            return True
        try:
            with open(f"/proc/{self.pid}/cmdline", "rb") as fh:
                return b"gputop" in fh.read()
        except OSError:
            return False


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:64] or "_"


def journal_path(host: str, backend: str, uuids: Iterable[str | None], folder: Path | None = None
                 ) -> Path:
    import hashlib  # here, not at the top: it maps libcrypto (~4 MB) into every dashboard

    key = hashlib.sha256("\n".join(sorted(u or "?" for u in uuids)).encode()).hexdigest()[:12]
    return (folder or state_dir()) / f"{PREFIX}{_safe(host)}-{_safe(backend)}-{key}.json"


def write(path: Path, host: str, backend: str, entries: Sequence[JournalEntry]) -> Journal:
    """Journal ``entries`` at ``path`` (atomically, fsync'd); one GputopError line if it cannot
    be written, before any limit is changed."""
    _make_folder(path.parent)
    started = time.time()
    doc = {
        "schema": SCHEMA,
        "host": host,
        "backend": backend,
        "pid": os.getpid(),
        "started": started,
        "devices": [{"index": e.index, "uuid": e.uuid, "original_limit_w": e.original_w}
                    for e in entries],
    }
    try:
        userfile.write_atomic(path, jsonout.dumps(doc, indent=1))
    except userfile.FileProblem as exc:
        raise GputopError(f"power-limit journal {path}: {exc}") from None
    return Journal(path, host, backend, os.getpid(), started, tuple(entries))


def remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    userfile.fsync_folder(path.parent)


def read(path: Path) -> Journal:
    """The journal at ``path``, checked; one GputopError line naming it when it cannot be used."""
    try:
        doc = userfile.load_json(userfile.read_text(path))
    except FileNotFoundError:
        raise _unreadable(path, "no such file") from None
    except userfile.FileProblem as exc:
        raise _unreadable(path, str(exc)) from None
    return Journal(path, *_checked(path, doc))


def _unreadable(path: Path, why: str) -> GputopError:
    return GputopError(f"power-limit journal {path} is unreadable ({why}); check it by hand"
                       " and delete it once the limits are right")


def _known_keys(path: Path, obj: dict, known: tuple[str, ...], what: str) -> None:
    """Refuse a key this module never writes: a journal decides what is written to a device,
    and a key it does not understand may change what the journal means."""
    unknown = [key for key in obj if key not in known]
    if unknown:
        raise _unreadable(path, f"{what} has an unknown key {userfile.one_line(repr(unknown[0]), 60)}")


def _checked(path: Path, doc: object) -> tuple[str, str, int, float, tuple[JournalEntry, ...]]:
    """The journal's fields, each of the type and in the range this module writes, or one
    GputopError naming the first that is not: a journal decides what is written to a device."""
    def want(value: object, kinds: tuple[type, ...], what: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise _unreadable(path, f"{what} is {json_type(value)} {as_written(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise _unreadable(path, f"{what} is {as_written(value)}")
        return value

    want(doc, (dict,), "the document")
    assert isinstance(doc, dict)
    _known_keys(path, doc, _KEYS, "the document")
    if doc.get("schema") != SCHEMA:
        raise _unreadable(path, f"schema {as_written(doc.get('schema'))}, expected {SCHEMA}")
    host = want(doc.get("host"), (str,), '"host"')
    backend = want(doc.get("backend"), (str,), '"backend"')
    pid = want(doc.get("pid", 0), (int,), '"pid"')
    started = want(doc.get("started", 0.0), (int, float), '"started"')
    if not 0 <= pid < 2**31 or not 0 <= started < 2**40:
        raise _unreadable(path, f'"pid" {as_written(pid)} or "started" {as_written(started)}'
                                " is out of range")
    entries = []
    for n, d in enumerate(want(doc.get("devices"), (list,), '"devices"')):
        what = f"devices[{n}]"
        want(d, (dict,), what)
        _known_keys(path, d, _DEVICE_KEYS, what)
        index = want(d.get("index"), (int,), f'{what}["index"]')
        uuid = d.get("uuid")
        if uuid is not None:
            want(uuid, (str,), f'{what}["uuid"]')
        watts = want(d.get("original_limit_w"), (int, float), f'{what}["original_limit_w"]')
        if not 0 <= index < 4096 or not 0 < watts < 100000:
            raise _unreadable(path, f"{what}: GPU {as_written(index)} at"
                                    f" {as_written(watts)} W is out of range")
        entries.append(JournalEntry(index, uuid, float(watts)))
    return host, backend, pid, float(started), tuple(entries)


def find(host: str, backend: str, folder: Path | None = None,
         errors: list[str] | None = None) -> list[Journal]:
    """Journals this host and backend left, oldest first. An unreadable one raises, unless
    ``errors`` is given: then its message goes there and the others are still returned."""
    out = []
    for p in journal_files(folder):
        try:
            j = read(p)
        except GputopError as exc:
            if errors is None:
                raise
            errors.append(str(exc))
            continue
        if j.host == host and j.backend == backend:
            out.append(j)
    return sorted(out, key=lambda j: j.started)


def leftovers(backend: Backend, folder: Path | None = None,
              errors: list[str] | None = None) -> list[Journal]:
    """Journals for this node's devices whose run is over: limits that were never put back."""
    info = backend.info()
    uuids = {d.uuid for d in info.devices}
    return [j for j in find(info.host, backend.name, folder, errors)
            if not j.alive() and any(e.uuid in uuids for e in j.entries)]


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Serialise check-then-write between advisor runs starting at the same moment."""
    _make_folder(folder)
    try:
        # O_NONBLOCK: a FIFO left where the lock file belongs must not stop the advisor
        fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC,
                     0o600)
    except OSError as exc:
        raise GputopError(f"power-limit journal folder {folder}: cannot open its lock file:"
                          f" {exc.strerror or exc}") from None
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except (ImportError, OSError):
            pass  # no flock here: the check below still catches all but a true race
        yield
    finally:
        os.close(fd)


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise GputopError(f"power-limit journal folder {folder}: cannot create it:"
                          f" {exc.strerror or exc}") from None


def leftover_warning(journals: Sequence[Journal]) -> str:
    """One line: what each journal says was left changed, and the command that puts it back."""
    said = [f"an earlier `gputop advise` run changed power limits and did not put them back"
            f" ({j.describe()}; journal {j.path})." for j in journals]
    return " ".join([*said, "Run `gputop advise --restore` to restore them."])


def current_limits(backend: Backend, devices: Sequence[int]) -> dict[int, float | None]:
    snap = backend.sample(list(devices))
    return {d.index: d.power_limit_w for d in snap.devices}


def _unreachable(backend: Backend, devices: Sequence[int]) -> dict[int, str]:
    """Devices that cannot be read now (fallen off the bus, in error), with why."""
    try:
        snap = backend.sample(list(devices))
    except Exception:
        return {}
    return {d.index: d.status + (f" ({d.status_reason})" if d.status_reason else "")
            for d in snap.devices if d.status != "ok"}


class RestoreFailed(GputopError):
    pass


def restore_limits(backend: Backend, originals: Mapping[int, float]) -> list[tuple[int, float | None, float]]:
    """Set every device back to its original limit; returns (index, was, now) for each change.

    Tries every device even when one fails, then reads them all back.
    """
    try:
        before = current_limits(backend, list(originals))
    except Exception:  # reading failed: write them all rather than trust a guess
        before = {}
    changed: list[tuple[int, float | None, float]] = []
    failures: list[str] = []
    for i, w in originals.items():
        was = before.get(i)
        if was is not None and abs(was - w) < 0.01:
            continue
        try:
            backend.set_power_limit(i, w)
            changed.append((i, was, w))
        except (BackendError, OSError) as exc:
            failures.append(f"GPU {i}: {exc}")
    if not failures:
        after = current_limits(backend, list(originals))
        lost = _unreachable(backend, list(originals))
        for i, read in after.items():
            if i in lost:
                failures.append(f"GPU {i} is {lost[i]}: its limit cannot be read back; once it"
                                " is back (a reset or reboot also resets its limit), restore again")
            elif read is None or abs(read - originals[i]) >= 0.01:
                failures.append(f"GPU {i} reads {read} W after the restore, not {originals[i]:g} W")
    if failures:
        cmds = "; ".join(backend.limit_commands(originals))
        raise RestoreFailed("could not restore the original power limits: " + "; ".join(failures)
                            + ". Restore them with `gputop advise --restore`"
                            + (f" or: {cmds}" if cmds else ""))
    return changed


class LimitGuard:
    """Journal the current limits of ``devices`` before any change; put them back on exit.

    Use ``set()`` for every change. ``finish()`` restores and removes the journal; it is safe to
    call more than once. The journal stays when the restore fails.
    """

    def __init__(self, backend: Backend, devices: Sequence[int], folder: Path | None = None) -> None:
        self.backend = backend
        self.devices = list(devices)
        self.folder = folder
        self.journal: Journal | None = None
        self.originals: dict[int, float] = {}
        self.changed = False
        self.restored: list[tuple[int, float | None, float]] | None = None

    def begin(self, originals: Mapping[int, float] | None = None) -> Journal:
        info = self.backend.info()
        if originals is None:
            read_back = current_limits(self.backend, self.devices)
            missing = [i for i, w in read_back.items() if w is None]
            if missing:
                raise GputopError(f"GPU {missing[0]} does not report its power limit")
            originals = {i: float(w) for i, w in read_back.items() if w is not None}
        self.originals = dict(originals)
        uuids = {d.index: d.uuid for d in info.devices}
        entries = [JournalEntry(i, uuids.get(i), w) for i, w in self.originals.items()]
        ours = {e.uuid for e in entries}
        folder = self.folder or state_dir()
        path = journal_path(info.host, self.backend.name, ours, folder)
        with _locked(folder):
            # Any journal touching these GPUs means their current limits may not be the originals.
            for other in find(info.host, self.backend.name, folder):
                shared = sorted(e.index for e in other.entries if e.uuid in ours)
                if not shared:
                    continue
                gpus = ",".join(map(str, shared))
                if other.alive():
                    raise GputopError(f"another advisor run (pid {other.pid}) is changing GPU"
                                      f" {gpus}; wait for it to finish")
                raise GputopError(leftover_warning([other]))
            self.journal = write(path, info.host, self.backend.name, entries)
        return self.journal

    def set(self, limits: Mapping[int, float]) -> None:
        if self.journal is None:
            raise RuntimeError("LimitGuard.set before begin")
        for i, w in limits.items():
            if i not in self.originals:
                raise RuntimeError(f"GPU {i} is not journaled")
            self.changed = True
            self.backend.set_power_limit(i, w)

    def finish(self) -> list[tuple[int, float | None, float]]:
        if self.journal is None:
            return []
        if self.restored is None:
            self.restored = restore_limits(self.backend, self.originals)
        remove(self.journal.path)
        self.journal = None
        return self.restored

    def __enter__(self) -> LimitGuard:
        self.begin()
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()


def restore_from(backend: Backend, journal: Journal) -> list[tuple[int, float | None, float]]:
    """Restore what a journal recorded (matching devices by UUID) and remove it."""
    info = backend.info()
    by_uuid = {d.uuid: d.index for d in info.devices}
    originals: dict[int, float] = {}
    unknown = []
    for e in journal.entries:
        index = by_uuid.get(e.uuid) if e.uuid else e.index
        if index is None or not any(d.index == index for d in info.devices):
            unknown.append(e.uuid or str(e.index))
        else:
            originals[index] = e.original_w
    if unknown:
        raise GputopError(f"journal {journal.path} names devices this node does not have"
                          f" ({', '.join(unknown)}); restore those by hand and delete it")
    devices = {d.index: d for d in info.devices}
    for i, w in originals.items():
        lo, hi = devices[i].power_limit_min_w, devices[i].power_limit_max_w
        if lo is not None and hi is not None and not lo <= w <= hi:
            raise GputopError(f"journal {journal.path} holds {w:g} W for GPU {i}, outside its"
                              f" range {lo:g}-{hi:g} W; nothing was changed. Check the limits by"
                              " hand and delete the journal")
    changed = restore_limits(backend, originals)
    remove(journal.path)
    return changed
