"""Keep the alerts' journal: every transition as one JSON line (`Alert.to_json`), so that a
restarted gputop knows which alerts are firing and when each subject last fired.

Bounded: past ``max_bytes`` the file moves to ``<name>.1`` (replacing the one before) and a new
one starts, so the journal never holds more than twice ``max_bytes``. Each append is one
``write`` of whole lines to a file opened for appending; a crash can still cut the last line
short, so the reader skips a line that is not a whole alert instead of failing, and the writer
ends a cut line before it adds its own.

Default path: ``$XDG_STATE_HOME/gputop/alerts.jsonl`` (``~/.local/state/gputop/alerts.jsonl``);
``journal = "PATH"`` in the settings file's ``[alerts]`` names another.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gputop.alerts.model import Alert
from gputop.core import userfile
from gputop.core.errors import UsageError

MAX_BYTES = 1 << 20  # per file: a few thousand alerts, read whole at start in milliseconds
ROTATED = ".1"


@dataclass(frozen=True)
class JournalState:
    """What a journal says: the last transition of each subject (`Alert.key`) and when each
    last fired (a resolved subject still cools down)."""

    last: Mapping[str, Alert] = field(default_factory=dict)
    fired_at: Mapping[str, float] = field(default_factory=dict)


def state_of(alerts: Iterable[Alert]) -> JournalState:
    """Replay ``alerts``, oldest first, into the state they leave."""
    last: dict[str, Alert] = {}
    fired: dict[str, float] = {}
    for alert in alerts:
        last[alert.key] = alert
        if alert.state == "firing":
            fired[alert.key] = max(alert.at, fired.get(alert.key, alert.at))
    return JournalState(last=last, fired_at=fired)


def default_path(environ: Mapping[str, str] | None = None) -> Path:
    """Return ``$XDG_STATE_HOME/gputop/alerts.jsonl``, default under ``~/.local/state``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "gputop" / "alerts.jsonl"


def journal_path(table: Mapping[str, object] | None, where: str,
                 environ: Mapping[str, str] | None = None) -> Path:
    """Return the journal the settings file's ``[alerts]`` table names (``journal``), else the
    default; a bad value is a `UsageError` naming ``where``."""
    value = (table or {}).get("journal")
    if value is None:
        return default_path(environ)
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{where}: alerts.journal: must be a file's path in quotes")
    return Path(os.path.expanduser(value))


def read(path: Path, max_bytes: int = MAX_BYTES) -> tuple[list[Alert], int]:
    """Return the journal's alerts, oldest first (``.1`` then the file), and how many lines
    were skipped as not an alert (a line cut by a crash, a hand edit). A missing file is an
    empty journal; one that cannot be read at all is a `UsageError`."""
    alerts: list[Alert] = []
    skipped = 0
    for part in (_rotated(path), path):
        data = _tail(part, 2 * max_bytes)
        if not data:
            continue
        import json  # here, not at start: a dashboard with no journal yet does not load it

        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise ValueError("not an object")
                alerts.append(Alert.from_json(obj))
            except ValueError:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
                skipped += 1
    return alerts, skipped


def load_state(path: Path, max_bytes: int = MAX_BYTES) -> JournalState:
    """Return the state the journal at ``path`` leaves (see `state_of`)."""
    return state_of(read(path, max_bytes)[0])


def _rotated(path: Path) -> Path:
    return path.with_name(path.name + ROTATED)


def _tail(path: Path, limit: int) -> bytes:
    """The last ``limit`` bytes of a journal file, from its first whole line; b"" if none."""
    try:
        with userfile.open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                fh.seek(size - limit)
                fh.readline()  # the cut line before the first whole one
            return fh.read(limit)
    except FileNotFoundError:
        return b""
    except (userfile.FileProblem, OSError) as exc:
        raise UsageError(f"alert journal {userfile.one_line(str(path))}: {exc}") from None


class Journal:
    """Append alerts to the journal at ``path``, rotating it past ``max_bytes``."""

    def __init__(self, path: Path, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes

    def append(self, alerts: Iterable[Alert]) -> None:
        """Write ``alerts`` as whole lines in one write; raises OSError where it cannot."""
        from gputop.core.jsonout import dumps  # json: loaded at the first alert written

        data = "".join(dumps(a.to_json(), separators=(",", ":")) + "\n"
                       for a in alerts).encode()
        if not data:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            size = 0
        if size and size + len(data) > self.max_bytes:
            os.replace(self.path, _rotated(self.path))
            size = 0
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # end a line a crash cut short, so ours stays whole
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
        finally:
            os.close(fd)
