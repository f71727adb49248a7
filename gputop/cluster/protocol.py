"""The agent stream, as the viewer reads it: a hello line, then one gputop/1 snapshot per line.

Everything a remote sends is untrusted. Lines are size-capped before they get here (see
``lines.py``); each document is JSON-parsed without NaN/Infinity and passes gputop's one
validation layer (``gputop/core/untrusted.py``: finite numbers within ±2^63, the model's type for
every key, printable capped strings) before the model's dataclasses are built from it. A document
that fails makes its node ``protocol-error`` with the reason; it never raises out of here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gputop.cluster import states
from gputop.cluster.lines import Oversize
from gputop.core.model import (
    SCHEMA,
    Device,
    Hint,
    Saturation,
    SchemaError,
    Snapshot,
    XidEvent,
    mig_instance_from_json,
    process_from_json,
)
from gputop.core.untrusted import clean_document, loads, printable
from gputop.formats.agent_stream import HELLO

__all__ = ["AgentDecoder", "Checked", "Hello", "Problem", "build_snapshot", "clean_document",
           "decode_snapshot", "printable"]

MAX_PREAMBLE_LINES = 50  # shell noise (a chatty .bashrc) tolerated before the hello


@dataclass(frozen=True)
class Hello:
    version: str
    backend: str
    host: str


@dataclass(frozen=True, eq=False)
class Checked:
    """A snapshot document that passed every check; the model is built from it when needed."""

    doc: dict[str, Any]


@dataclass(frozen=True)
class Problem:
    state: str
    reason: str
    fatal: bool  # True: this connection is useless (wrong schema); drop it


def build_snapshot(clean: dict[str, Any]) -> Snapshot:
    """The model's dataclasses from a document ``clean_document`` accepted (left unchanged).

    Built here rather than through ``snapshot_from_json``, whose checks ``clean_document`` has
    already made; a test holds the two equal."""
    devices = []
    for dev in clean["devices"]:
        kw = dict(dev)
        sat = kw.get("saturation")
        if sat is not None:
            kw["saturation"] = Saturation(**sat)
        kw["processes"] = tuple([process_from_json(p) for p in kw.get("processes", ())])
        kw["mig_instances"] = tuple([mig_instance_from_json(m)
                                     for m in kw.get("mig_instances", ())])
        kw["xid_events"] = tuple([XidEvent(**e) for e in kw.get("xid_events", ())])
        reasons = kw.get("clock_event_reasons")
        if reasons is not None:
            kw["clock_event_reasons"] = tuple(reasons)
        devices.append(Device(**kw))
    return Snapshot(
        host=clean["host"], time=float(clean["time"]), backend=clean["backend"],
        driver_version=clean.get("driver_version"), cuda_version=clean.get("cuda_version"),
        devices=tuple(devices), hints=tuple([Hint(**h) for h in clean["hints"]]), schema=SCHEMA)


def decode_snapshot(doc: Any) -> Snapshot:
    return build_snapshot(clean_document(doc))


# ------------------------------------------------------------------ the stream

class AgentDecoder:
    """Turns the lines of one agent session into Hello / Snapshot / Problem events."""

    def __init__(self) -> None:
        self.hello: Hello | None = None
        self.preamble = 0

    def feed(self, line: bytes | Oversize) -> Hello | Checked | Problem | None:
        if isinstance(line, Oversize):
            return Problem(states.PROTOCOL_ERROR,
                           f"discarded an oversized line ({line.size:,} bytes)", fatal=False)
        stripped = line.strip()
        if not stripped:
            return None
        if self.hello is None:
            return self._before_hello(stripped)
        try:
            doc = loads(stripped)
        except (ValueError, RecursionError) as exc:
            return Problem(states.PROTOCOL_ERROR, f"invalid JSON from the agent: "
                           f"{printable(str(exc), 120)}", fatal=False)
        return self._snapshot(doc)

    def _before_hello(self, line: bytes) -> Hello | Problem | None:
        doc = None
        if line.startswith(b"{"):
            try:
                doc = loads(line)
            except (ValueError, RecursionError):
                doc = None
        if isinstance(doc, dict) and doc.get("hello") == HELLO:
            schema = doc.get("schema")
            if schema != SCHEMA:
                return Problem(states.INCOMPATIBLE,
                               f"the remote gputop speaks {printable(str(schema), 40)!r}; "
                               f"this viewer speaks {SCHEMA!r}", fatal=True)
            self.hello = Hello(printable(str(doc.get("version", "?")), 40),
                               printable(str(doc.get("backend", "?")), 40),
                               printable(str(doc.get("host", "?")), 255))
            return self.hello
        self.preamble += 1
        if self.preamble > MAX_PREAMBLE_LINES:
            return Problem(states.INCOMPATIBLE, "the remote command is not a gputop agent "
                           f"(no hello in its first {MAX_PREAMBLE_LINES} lines)", fatal=True)
        return None

    def _snapshot(self, doc: Any) -> Checked | Problem:
        try:
            return Checked(clean_document(doc))
        except SchemaError as exc:
            text = printable(str(exc), 200)
            if text.startswith("schema is"):
                return Problem(states.INCOMPATIBLE, text, fatal=True)
            return Problem(states.PROTOCOL_ERROR, f"invalid snapshot: {text}", fatal=False)
        except (TypeError, ValueError) as exc:
            return Problem(states.PROTOCOL_ERROR, f"invalid snapshot: {printable(str(exc), 200)}",
                           fatal=False)
