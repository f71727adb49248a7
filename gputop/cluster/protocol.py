"""The agent stream, as the viewer reads it: a hello line, then one gputop/1 snapshot per line.

Everything a remote sends is untrusted. Lines are size-capped before they get here (see
``lines.py``); each document is JSON-parsed without NaN/Infinity, type-checked field by field
against the model, its strings made printable and length-capped (a process name must never be
able to move the cursor or recolour the terminal), and only then decoded with the model's codec.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass, fields
from typing import Any

from gputop.cluster import states
from gputop.cluster.lines import Oversize
from gputop.model import (
    SCHEMA,
    Container,
    Device,
    Hint,
    Job,
    Process,
    Saturation,
    SchemaError,
    Snapshot,
    process_from_json,
)

MAX_PREAMBLE_LINES = 50  # shell noise (a chatty .bashrc) tolerated before the hello
MAX_STRING = 4096
MAX_DEVICES = 1024
MAX_PROCESSES = 10000
MAX_HINTS = 1000


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


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def loads(line: bytes) -> Any:
    return json.loads(line, parse_constant=_reject_constant)


def printable(text: str, limit: int = MAX_STRING) -> str:
    if len(text) > limit:
        text = text[:limit] + "…"
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else "\ufffd" for c in text)


# ------------------------------------------------------------------ field-by-field type checks

_NUM = "num"
_INT = "int"
_STR = "str"
_BOOL = "bool"
_STRLIST = "strlist"
_NUMDICT = "numdict"
_KINDS = {"float": _NUM, "int": _INT, "str": _STR, "bool": _BOOL, "tuple[str, ...]": _STRLIST,
          "dict[str, float]": _NUMDICT}


_TYPES = {_NUM: (int, float), _INT: (int,), _STR: (str,), _BOOL: (bool,), _STRLIST: (list,),
          _NUMDICT: (dict,)}
_Spec = tuple[frozenset, "str | None"]


def _kinds(cls: type) -> dict[str, _Spec]:
    """field -> (accepted Python types, kind), from the dataclass annotations: the model stays
    the one truth. A field of a type this module does not know (kind None) passes through to
    the codec. ``bool`` is never a number here: ``type(True) is bool``, not ``int``."""
    out: dict[str, _Spec] = {}
    for f in fields(cls):
        text = str(f.type)
        nullable = text.endswith(" | None")
        kind = _KINDS.get(text.removesuffix(" | None"))
        types = set(_TYPES.get(kind, ())) if kind else set()
        if nullable:
            types.add(type(None))
        out[f.name] = (frozenset(types), kind)
    return out


_DEVICE = _kinds(Device)
_PROCESS = _kinds(Process)
_PROCESS_NESTED = {"container": _kinds(Container), "job": _kinds(Job)}
_SATURATION = _kinds(Saturation)
_HINT = _kinds(Hint)
_SNAPSHOT = _kinds(Snapshot)


def _is_num(v: Any) -> bool:
    return type(v) is int or type(v) is float


def _check_container(kind: str, v: Any) -> Any:
    if kind == _STRLIST:
        if len(v) <= 64 and all(type(s) is str for s in v):
            return [printable(s, 128) for s in v]
    elif kind == _NUMDICT:
        if len(v) <= 64 and all(x is None or _is_num(x) for x in v.values()):
            return {printable(str(k), 128): x for k, x in v.items()}
    raise SchemaError(f"a {kind} was expected")


class _AnyType(frozenset):
    """Accepts every type: fields this module leaves to the codec (nested objects)."""

    def __contains__(self, item: object) -> bool:
        return True


_ANY = _AnyType()
# Per table: key -> accepted types, for the all-in-C fast check below.
_FAST: dict[int, dict[str, frozenset]] = {}


def _str_ok(v: Any) -> bool:
    return type(v) is not str or (len(v) <= MAX_STRING and v.isprintable())


def _clean(obj: Any, table: dict[str, _Spec], what: str) -> dict[str, Any]:
    # The hot path of the viewer: every field of every snapshot of every node. A well-formed
    # object (only known keys, right types, printable strings) is checked with map() over C
    # functions and kept as it is; anything else takes the field-by-field path below, which
    # drops unknown keys, repairs strings and names the first wrong field.
    if type(obj) is not dict:
        raise SchemaError(f"{what} is not an object")
    fast = _FAST.get(id(table))
    if fast is None:
        fast = _FAST[id(table)] = {k: (_ANY if kind is None else types)
                                   for k, (types, kind) in table.items()}
    try:
        ok = all(map(operator.contains, map(fast.__getitem__, obj), map(type, obj.values())))
    except KeyError:  # an unknown key
        ok = False
    if ok and all(map(_str_ok, obj.values())):
        for key, value in obj.items():
            t = type(value)
            if t is list or t is dict:
                kind = table[key][1]
                if kind is not None:
                    try:
                        obj[key] = _check_container(kind, value)
                    except SchemaError:
                        raise SchemaError(f"{what}.{key}: {kind} expected") from None
        return obj
    return _clean_slow(obj, table, what)


def _clean_slow(obj: dict[str, Any], table: dict[str, _Spec], what: str) -> dict[str, Any]:
    out = {}
    for key, value in obj.items():
        spec = table.get(key)
        if spec is None:
            continue  # unknown keys: a newer agent may add some; the codec ignores them
        types, kind = spec
        t = type(value)
        if t in types:
            if t is str:
                if len(value) > MAX_STRING or not value.isprintable():
                    value = printable(value)
            elif t is list or t is dict:
                try:
                    value = _check_container(kind, value)  # type: ignore[arg-type]
                except SchemaError:
                    raise SchemaError(f"{what}.{key}: {kind} expected") from None
            out[key] = value
        elif kind is None:
            out[key] = value
        elif value is None:
            raise SchemaError(f"{what}.{key} is null")
        else:
            raise SchemaError(f"{what}.{key}: {kind} expected, got {type(value).__name__}")
    return out


def _require(obj: dict[str, Any], keys: tuple[str, ...], what: str) -> dict[str, Any]:
    for key in keys:
        if obj.get(key) is None:
            raise SchemaError(f"{what} without {key}")
    return obj


def _clean_process(proc: Any, what: str) -> dict[str, Any]:
    out = _require(_clean(proc, _PROCESS, what), ("pid",), what)
    for key, table in _PROCESS_NESTED.items():
        if out.get(key) is not None:
            out[key] = _clean(out[key], table, f"{what}.{key}")
    return out


def clean_document(doc: Any) -> dict[str, Any]:
    """Type-check and sanitise a snapshot document; raise SchemaError on anything wrong."""
    if not isinstance(doc, dict):
        raise SchemaError("snapshot is not an object")
    if doc.get("schema") != SCHEMA:
        raise SchemaError(f"schema is {printable(str(doc.get('schema')), 40)!r}, "
                          f"expected {SCHEMA!r}")
    out = _clean(doc, _SNAPSHOT, "snapshot")
    _require(out, ("host", "time", "backend"), "snapshot")
    out["schema"] = SCHEMA
    devices = doc.get("devices") or []
    if not isinstance(devices, list) or len(devices) > MAX_DEVICES:
        raise SchemaError("devices is not a list of a sane length")
    out_devices = []
    for i, dev in enumerate(devices):
        clean = _clean(dev, _DEVICE, f"devices[{i}]")
        _require(clean, ("index",), f"devices[{i}]")
        sat = dev.get("saturation")
        if sat is not None:
            clean["saturation"] = _clean(sat, _SATURATION, f"devices[{i}].saturation")
        procs = dev.get("processes") or []
        if not isinstance(procs, list) or len(procs) > MAX_PROCESSES:
            raise SchemaError(f"devices[{i}].processes is not a list of a sane length")
        clean["processes"] = [_clean_process(p, f"devices[{i}].processes[{j}]")
                              for j, p in enumerate(procs)]
        out_devices.append(clean)
    out["devices"] = out_devices
    hints = doc.get("hints") or []
    if not isinstance(hints, list) or len(hints) > MAX_HINTS:
        raise SchemaError("hints is not a list of a sane length")
    out["hints"] = [_require(_clean(h, _HINT, f"hints[{k}]"), ("code", "severity", "message"),
                             f"hints[{k}]") for k, h in enumerate(hints)]
    return out


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
        if isinstance(doc, dict) and doc.get("hello") == "gputop":
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
