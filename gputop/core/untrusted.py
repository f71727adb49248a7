"""The one validation layer for numbers and documents gputop did not make itself.

A remote agent's stream, a replay log and a tool's text (npu-smi, nvidia-smi) can hold anything:
``1e400`` (which Python reads as infinity), a 400-digit integer, ``NaN``, ``null`` where an
object belongs, strings where numbers belong, deep nesting, huge lists. Everything such a source
says passes through here before it reaches the model, so that the model only ever holds:

- numbers that are finite and within ±2^63 (``LIMIT``), never a ``bool`` posing as one;
- per key, the type the model declares (from the dataclass annotations: the model stays the one
  truth); ``null`` is accepted only where the model allows ``None``;
- printable, length-capped strings (a process name must never move the cursor or recolour the
  terminal: what is not printable is written out as ``gputop.core.visible`` shows it).

Pure functions; raises :class:`~gputop.core.model.SchemaError` naming the first wrong key.
"""

from __future__ import annotations

import json
import math
import operator
from dataclasses import fields
from typing import Any

from gputop.core.model import (
    SCHEMA,
    Container,
    Device,
    Hint,
    Job,
    MigInstance,
    Process,
    Saturation,
    SchemaError,
    Snapshot,
    XidEvent,
)
from gputop.core.visible import visible

LIMIT = 2**63  # no reading of any device comes near; sums of 10^4 of them stay finite
MAX_INT_DIGITS = 19  # len(str(2**63)); longer digit strings are refused before int() runs
MAX_STRING = 4096
MAX_DEVICES = 1024
MAX_PROCESSES = 10000
MAX_MIG_INSTANCES = 64  # 7 GPU instances today, each with up to 7 compute instances at most
MAX_HINTS = 1000
MAX_SMALL = 64  # entries of a small list or dict (clock event reasons, the sim's figures)
MAX_XID_EVENTS = 64  # a device's Xids in one sample: what the NVML backend keeps per GPU


# ------------------------------------------------------------------ numbers

def number_ok(value: Any) -> bool:
    """A finite int or float within ±LIMIT (NaN fails every comparison); never a bool."""
    t = type(value)
    return (t is float or t is int) and -LIMIT <= value <= LIMIT


def parse_float(text: str) -> float | None:
    """A tool's decimal text as a float; None when it is not a finite number within ±LIMIT
    (``nan``, ``inf`` and ``1e400`` included). Raises nothing."""
    text = text.strip()
    if len(text) > 64:  # no real reading is this long; float() on megabytes is slow
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if -LIMIT <= value <= LIMIT else None


def parse_int(text: str, base: int = 10) -> int | None:
    """A tool's integer text (``base`` 16 for masks and ids) as an int; None when it is not one
    or is beyond ±LIMIT. The length is checked first, so a 4000-digit cell costs nothing."""
    text = text.strip()
    digits = text.removeprefix("-").removeprefix("+")
    if base == 16:
        digits = digits.removeprefix("0x").removeprefix("0X").lstrip("0")
        limit = 16
    else:
        digits = digits.lstrip("0")
        limit = MAX_INT_DIGITS
    if len(digits) > limit:
        return None
    try:
        value = int(text, base)
    except ValueError:
        return None
    return value if -LIMIT <= value <= LIMIT else None


def check_numbers(values: dict[str, Any], what: str) -> dict[str, Any]:
    """Raise SchemaError at the first int/float value of ``values`` that ``number_ok`` refuses."""
    for key, value in values.items():
        t = type(value)
        if (t is float or t is int) and not -LIMIT <= value <= LIMIT:
            raise SchemaError(f"{what}.{key}: {describe(value)} is not a finite number "
                              "within ±2^63")
    return values


def describe(value: Any) -> str:
    """A short, safe description of a bad value (a 400-digit integer is not printed whole)."""
    if type(value) is int:
        text = str(value) if abs(value) < 10**30 else f"a {len(str(abs(value)))}-digit integer"
        return text
    if type(value) is float and not math.isfinite(value):
        return "a non-finite number"
    return printable(repr(value), 40)


# ------------------------------------------------------------------ JSON text

def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def loads(line: bytes | str, object_pairs_hook: Any = None) -> Any:
    """Strict JSON: ``NaN``, ``Infinity`` and ``-Infinity`` are refused (numbers beyond ±LIMIT
    and deep nesting are refused by the checks below and by the parser's RecursionError).
    ``object_pairs_hook`` as for ``json.loads`` (a file's reader refuses a key given twice)."""
    return json.loads(line, parse_constant=_reject_constant, object_pairs_hook=object_pairs_hook)


def printable(text: str, limit: int = MAX_STRING) -> str:
    """``text`` cut to ``limit`` characters and made visible (``gputop.core.visible``): what a
    remote source says is shown as it was written, never obeyed by the terminal."""
    if len(text) > limit:
        text = text[:limit] + "…"
    return visible(text)


# ------------------------------------------------------------------ field-by-field type checks

_NUM = "num"
_INT = "int"
_STR = "str"
_BOOL = "bool"
_STRLIST = "strlist"
_NUMDICT = "numdict"
_OBJECT = "object"  # a nested model object (saturation): checked by its own table
_LIST = "list"  # a list of nested model objects (processes, devices, hints)
_KINDS = {"float": _NUM, "int": _INT, "str": _STR, "bool": _BOOL, "tuple[str, ...]": _STRLIST,
          "dict[str, float]": _NUMDICT, "Saturation": _OBJECT, "Container": _OBJECT, "Job": _OBJECT, "tuple[Process, ...]": _LIST,
          "tuple[MigInstance, ...]": _LIST, "tuple[XidEvent, ...]": _LIST,
          "tuple[Device, ...]": _LIST, "tuple[Hint, ...]": _LIST}
_TYPES = {_NUM: (int, float), _INT: (int,), _STR: (str,), _BOOL: (bool,), _STRLIST: (list,),
          _NUMDICT: (dict,), _OBJECT: (dict,), _LIST: (list,)}
_Spec = tuple[frozenset, str]


def _kinds(cls: type) -> dict[str, _Spec]:
    """field -> (accepted Python types, kind), from the dataclass annotations. A field of a type
    this module does not know fails at import: every key has a known type. ``bool`` is never a
    number here: ``type(True) is bool``, not ``int``."""
    out: dict[str, _Spec] = {}
    for f in fields(cls):
        text = str(f.type)
        nullable = text.endswith(" | None")
        kind = _KINDS[text.removesuffix(" | None")]
        types: set[type] = set(_TYPES[kind])
        if nullable:
            types.add(type(None))
        out[f.name] = (frozenset(types), kind)
    return out


_DEVICE = _kinds(Device)
_PROCESS = _kinds(Process)
# nested object -> (its table, the keys it cannot be without)
_PROCESS_NESTED = {"container": (_kinds(Container), ()),
                   "job": (_kinds(Job), ("scheduler", "id"))}
_SATURATION = _kinds(Saturation)
_MIG = _kinds(MigInstance)
_HINT = _kinds(Hint)
_XID = _kinds(XidEvent)
_SNAPSHOT = _kinds(Snapshot)
# Per table: key -> accepted types, for the all-in-C fast check below.
_FAST = {id(t): {k: types for k, (types, _) in t.items()}
         for t in (_DEVICE, _PROCESS, _SATURATION, _MIG, _HINT, _SNAPSHOT, _XID,
                   *(table for table, _ in _PROCESS_NESTED.values()))}


def _check_container(kind: str, v: Any) -> Any:
    if kind == _STRLIST:
        if len(v) <= MAX_SMALL and all(type(s) is str for s in v):
            return [printable(s, 128) for s in v]
    elif kind == _NUMDICT:
        if len(v) <= MAX_SMALL and all(x is None or number_ok(x) for x in v.values()):
            return {printable(str(k), 128): x for k, x in v.items()}
    else:
        return v  # nested objects and lists: checked by the caller, table by table
    raise SchemaError(f"a {kind} was expected")


def _scalar_ok(v: Any) -> bool:
    t = type(v)
    if t is str:
        return len(v) <= MAX_STRING and v.isprintable()
    if t is float or t is int:
        return -LIMIT <= v <= LIMIT
    return True


def _clean(obj: Any, table: dict[str, _Spec], what: str) -> dict[str, Any]:
    # The hot path of the cluster viewer: every field of every snapshot of every node. A
    # well-formed object (only known keys, right types, printable strings, numbers in range) is
    # checked with map() over C functions (and one small one) and kept as it is; anything else
    # takes the field-by-field path below, which drops unknown keys, repairs strings and names
    # the first wrong field.
    if type(obj) is not dict:
        raise SchemaError(f"{what} is not an object")
    fast = _FAST[id(table)]
    try:
        ok = all(map(operator.contains, map(fast.__getitem__, obj), map(type, obj.values())))
    except KeyError:  # an unknown key
        ok = False
    if ok and all(map(_scalar_ok, obj.values())):
        for key, value in obj.items():
            t = type(value)
            if t is list or t is dict:
                kind = table[key][1]
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
            elif t is int or t is float:
                if not -LIMIT <= value <= LIMIT:
                    raise SchemaError(f"{what}.{key}: {describe(value)} is not a finite number "
                                      "within ±2^63")
            elif t is list or t is dict:
                try:
                    value = _check_container(kind, value)
                except SchemaError:
                    raise SchemaError(f"{what}.{key}: {kind} expected") from None
            out[key] = value
        elif value is None:
            raise SchemaError(f"{what}.{key} is null, {kind} expected")
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
    for key, (table, required) in _PROCESS_NESTED.items():
        if out.get(key) is not None:
            out[key] = _require(_clean(out[key], table, f"{what}.{key}"), required,
                                f"{what}.{key}")
    return out


def _clean_holder(raw: dict[str, Any], out: dict[str, Any], what: str) -> dict[str, Any]:
    """``out`` (a cleaned device or MIG instance) with the saturation and processes of ``raw``
    cleaned in."""
    if "saturation" in out:
        out["saturation"] = _clean(out["saturation"], _SATURATION, f"{what}.saturation")
    out["processes"] = [_clean_process(p, f"{what}.processes[{j}]")
                        for j, p in enumerate(_list(raw, "processes", MAX_PROCESSES, what))]
    return out


def _clean_mig(inst: Any, what: str) -> dict[str, Any]:
    out = _require(_clean(inst, _MIG, what), ("gpu_instance_id", "compute_instance_id"), what)
    return _clean_holder(inst, out, what)


def _list(doc: dict[str, Any], key: str, limit: int, what: str) -> list[Any]:
    value = doc.get(key, [])
    if type(value) is not list:
        raise SchemaError(f"{what}.{key} is not a list")
    if len(value) > limit:
        raise SchemaError(f"{what}.{key} has {len(value)} entries, more than {limit}")
    return value


def clean_document(doc: Any) -> dict[str, Any]:
    """Type-check and sanitise a ``gputop/1`` snapshot document (from an agent, or any other
    source gputop did not write itself); raise SchemaError on anything wrong."""
    if not isinstance(doc, dict):
        raise SchemaError("snapshot is not an object")
    if doc.get("schema") != SCHEMA:
        raise SchemaError(f"schema is {printable(str(doc.get('schema')), 40)!r}, "
                          f"expected {SCHEMA!r}")
    out = _clean(doc, _SNAPSHOT, "snapshot")
    _require(out, ("host", "time", "backend"), "snapshot")
    out["schema"] = SCHEMA
    out_devices = []
    for i, dev in enumerate(_list(doc, "devices", MAX_DEVICES, "snapshot")):
        where = f"devices[{i}]"
        clean = _clean_holder(dev, _require(_clean(dev, _DEVICE, where), ("index",), where),
                              where)
        clean["mig_instances"] = [
            _clean_mig(m, f"{where}.mig_instances[{j}]")
            for j, m in enumerate(_list(dev, "mig_instances", MAX_MIG_INSTANCES, where))]
        clean["xid_events"] = [
            _require(_clean(e, _XID, f"{where}.xid_events[{j}]"), ("device", "code", "time"),
                     f"{where}.xid_events[{j}]")
            for j, e in enumerate(_list(dev, "xid_events", MAX_XID_EVENTS, where))]
        out_devices.append(clean)
    out["devices"] = out_devices
    out["hints"] = [_require(_clean(h, _HINT, f"hints[{k}]"), ("code", "severity", "message"),
                             f"hints[{k}]")
                    for k, h in enumerate(_list(doc, "hints", MAX_HINTS, "snapshot"))]
    return out
