"""Xid errors explained: what each code means by NVIDIA's catalog, and whom it hit.

The catalog is data (``gputop/data/xid-catalog.toml``, its source and the driver it describes
written in it); ``catalog()`` loads it once. ``explain`` is pure: an Xid event and the snapshot
it came in (and the one before) give an ``ExplainedXid`` naming the Xid, its meaning, what to do
and the processes, users and jobs on that GPU at that moment. ``XidLog`` keeps the last explained
events for the screens and outputs that list them.

Attribution is by place and time, not by cause: NVML's event names the GPU, not the process, so
every process on the GPU in the sample that brought the Xid is named, and so is every process
that was there one sample earlier and is gone now (an Xid often ends the process it hit, before
gputop sees the event). A process on another GPU of the same job is not named.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gputop.analysis.jobs import job_name
from gputop.core import datafiles
from gputop.core.model import Device, Process, Snapshot, XidEvent

SEVERITIES = ("info", "warning", "critical")
# What a code the catalog does not list, or a row without an Immediate Action, is shown with.
NO_ACTION = "the catalog gives no action for it"
UNKNOWN_SEVERITY = "warning"
# Explained events ``XidLog`` keeps by default: enough for a screen, bounded for a week-long run.
LOG_SIZE = 200


@dataclass(frozen=True, slots=True)
class Bucket:
    """One of the catalog's resolution buckets (RESET_GPU, …) as gputop words it."""

    action: str  # what to do, in plain words: "reset the GPU"
    severity: str  # SEVERITIES
    nvidia: str  # the catalog's own Resolution Action text


@dataclass(frozen=True, slots=True)
class Entry:
    """One row of the catalog's Xids sheet."""

    code: int
    mnemonic: str
    description: str
    immediate: str | None = None
    investigatory: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class XidInfo:
    """An Xid code decoded: its name, what it usually means, and what to do."""

    code: int
    name: str  # "GPU has fallen off the bus"; "unknown Xid 999 (not in NVIDIA's catalog of R575)"
    meaning: str
    action: str  # "drain the node and reboot it"
    severity: str
    bucket: str | None = None  # the catalog's Immediate Action: "RESTART_BM"
    mnemonic: str | None = None
    known: bool = True


@dataclass(frozen=True, slots=True)
class Catalog:
    url: str
    driver: str
    entries: Mapping[int, Entry]
    buckets: Mapping[str, Bucket]

    def describe(self, code: int) -> XidInfo:
        """Decode ``code``; one the catalog does not list says so rather than guess."""
        entry = self.entries.get(code)
        if entry is None:
            return XidInfo(code, f"unknown Xid {code} (not in NVIDIA's catalog of {self.driver})",
                           "NVIDIA's catalog does not list this code", NO_ACTION,
                           UNKNOWN_SEVERITY, known=False)
        unused = entry.description == "Unused"
        name = f"{entry.mnemonic}, unused on Ampere and newer" if unused else entry.description
        bucket = self.buckets.get(entry.immediate) if entry.immediate else None
        return XidInfo(
            code, name, entry.note or entry.description,
            bucket.action if bucket else NO_ACTION,
            bucket.severity if bucket else UNKNOWN_SEVERITY,
            entry.immediate, entry.mnemonic)


def parse_catalog(data: Mapping[str, Any]) -> Catalog:
    """The catalog from the data file's TOML; ValueError names what is wrong with it."""
    source = data.get("source", {})
    buckets = {}
    for key, raw in data.get("bucket", {}).items():
        if raw.get("severity") not in SEVERITIES:
            raise ValueError(f"[bucket.{key}]: severity {raw.get('severity')!r} is not one of"
                             f" {', '.join(SEVERITIES)}")
        buckets[key] = Bucket(str(raw["action"]), raw["severity"], str(raw["nvidia"]))
    entries: dict[int, Entry] = {}
    for raw in data.get("xid", []):
        code = raw["code"]
        if not isinstance(code, int) or code in entries:
            raise ValueError(f"[[xid]] code {code!r} is not an integer or is listed twice")
        immediate = raw.get("immediate")
        if immediate is not None and immediate not in buckets:
            raise ValueError(f"Xid {code}: immediate action {immediate!r} has no [bucket]")
        entries[code] = Entry(code, str(raw["mnemonic"]), str(raw["description"]), immediate,
                              raw.get("investigatory"), raw.get("note"))
    return Catalog(str(source["url"]), str(source["driver"]), entries, buckets)


@lru_cache(maxsize=1)
def catalog() -> Catalog:
    """Load the catalog, at the first Xid explained: a dashboard that sees none (and reads no
    settings file) never loads the TOML parser."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    text = datafiles.read_text("xid-catalog.toml")
    return parse_catalog(tomllib.loads(text))


# ---------------------------------------------------------------- attribution
@dataclass(frozen=True, slots=True)
class Hit:
    """A process on the GPU when the Xid came: who ran it and in which job."""

    pid: int
    name: str | None
    user: str | None
    job: str | None  # "job 4242", "pod research/trainer-0" (analysis.jobs.job_name)
    ended: bool = False  # gone since the sample before: the Xid may have ended it


@dataclass(frozen=True, slots=True)
class ExplainedXid:
    host: str
    time: float
    device: int
    uuid: str | None
    info: XidInfo
    hits: tuple[Hit, ...] = ()

    @property
    def jobs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(h.job for h in self.hits if h.job))

    @property
    def users(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(h.user for h in self.hits if h.user))

    def whom(self) -> str:
        """``job 1234 (alice)``, ``pid 4242 python (bob)``, ``no process seen on it``."""
        if not self.hits:
            return "no process seen on it"
        users = self.users
        who = f" ({', '.join(users)})" if users else ""
        if self.jobs:
            return ", ".join(self.jobs) + who
        named = [f"pid {h.pid}" + (f" {h.name}" if h.name else "") for h in self.hits]
        return ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "") + who

    def summary(self) -> str:
        """``GPU 2 Xid 79 (GPU has fallen off the bus): job 1234 (alice)``."""
        return f"GPU {self.device} Xid {self.info.code} ({self.info.name}): {self.whom()}"

    def to_json(self) -> dict[str, Any]:
        """The event as ``snapshot --json`` and the agent stream carry it."""
        info = self.info
        return {"host": self.host, "time": self.time, "device": self.device, "uuid": self.uuid,
                "code": info.code, "name": info.name, "known": info.known,
                "meaning": info.meaning, "action": info.action, "bucket": info.bucket,
                "severity": info.severity,
                "pids": [h.pid for h in self.hits], "users": list(self.users),
                "jobs": list(self.jobs),
                "processes": [{"pid": h.pid, "name": h.name, "user": h.user, "job": h.job,
                               "ended": h.ended} for h in self.hits]}


def _hit(proc: Process, ended: bool) -> Hit:
    return Hit(proc.pid, proc.name, proc.user, job_name(proc), ended)


def explain(event: XidEvent, snap: Snapshot, before: Snapshot | None = None,
            table: Catalog | None = None) -> ExplainedXid:
    """``event`` decoded by the catalog and tied to the processes on its GPU in ``snap`` (the
    sample that brought it), and to those on it in ``before`` that are gone in ``snap``."""
    dev = snap.device(event.device)
    now = dev.processes if dev is not None else ()
    seen = {p.pid for p in now}
    prior: Device | None = before.device(event.device) if before is not None else None
    ended = [p for p in prior.processes if p.pid not in seen] if prior is not None else []
    hits = tuple(_hit(p, False) for p in now) + tuple(_hit(p, True) for p in ended)
    info = (table or catalog()).describe(event.code)
    uuid = dev.uuid if dev is not None else (prior.uuid if prior is not None else None)
    return ExplainedXid(snap.host, event.time, event.device, uuid, info, hits)


def explain_all(snap: Snapshot, before: Snapshot | None = None) -> list[ExplainedXid]:
    """Every Xid event ``snap`` carries, explained, oldest first."""
    return [explain(e, snap, before) for dev in snap.devices for e in dev.xid_events]


class XidLog:
    """The last ``size`` explained Xid events of a stream of snapshots (one host), for the
    screens and outputs that list them. Feed it every snapshot, in order."""

    def __init__(self, size: int = LOG_SIZE) -> None:
        self._events: deque[ExplainedXid] = deque(maxlen=size)
        self._before: Snapshot | None = None

    def add(self, snap: Snapshot) -> list[ExplainedXid]:
        """Explain the events ``snap`` brings; return them (oldest first)."""
        new = explain_all(snap, self._before) if any(d.xid_events for d in snap.devices) else []
        self._events.extend(new)
        self._before = snap
        return new

    def listen(self, snap: Snapshot) -> None:
        """``add``, as a sampler's listener (gputop.sampler.Listener)."""
        self.add(snap)

    def extend(self, snaps: Iterable[Snapshot]) -> None:
        for snap in snaps:
            self.add(snap)

    def events(self) -> list[ExplainedXid]:
        """Newest first."""
        return list(reversed(self._events))

    def latest(self, device: int) -> ExplainedXid | None:
        for event in reversed(self._events):
            if event.device == device:
                return event
        return None
