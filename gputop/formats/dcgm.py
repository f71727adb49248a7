"""dcgm-exporter's fields, read off the model: which ``DCGM_FI_*`` field gputop serves from which
reading, under which name, type, unit and help text, and which it does not serve and why. The
table is data (``gputop/data/dcgm-fields.toml``); this module loads it and reads values. What
the exporter serves and the cluster view reads back sit on top of it. Pure: no I/O but the
package's own data file.

A reading the device does not report (None) gives no sample at all, never a 0.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from gputop.core import datafiles
from gputop.core.model import COMPUTE_MODES, Device, MigInstance, Snapshot
from gputop.core.units import MB_PER_MIB
from gputop.core.vendors import has_nvidia_figures

TYPES = ("gauge", "counter", "label")
# What a counters file may name as a type: dcgm-exporter's own list. It prints histogram and
# summary rows as one plain sample each, and so does gputop.
FILE_TYPES = ("gauge", "counter", "histogram", "summary", "label")
MIG_RULES = ("parent", "instance", "none")
SATURATION = "saturation."
COMBINED = "@"


def describes(dev: Device) -> bool:
    """Return whether dcgm-exporter's names may carry ``dev``'s readings (and label rows): a
    dashboard or alert built on DCGM_FI_* reads NVIDIA's meanings (GPU-Util's kernel time,
    NVML's clock-event bits, NVLink), and an amdgpu busy % or an i915 GT clock under those names
    would lie to it, so an AMD or Intel GPU is served under gputop's own families only
    (docs/prometheus.md, "Vendors"); Ascend keeps the DCGM names it has been served under."""
    return has_nvidia_figures(dev.vendor)


@dataclass(frozen=True)
class Field:
    """One field gputop serves: its DCGM id and default name, dcgm-exporter's type, unit and help,
    where the value comes from (``source``: a Device attribute, ``saturation.X``, or ``@X`` for a
    value combined below), the factor from the model's unit to DCGM's, whether it is text (served
    only as a label), what it is under MIG, and whether it is served without a counters file."""

    id: int
    name: str
    type: str
    help: str
    source: str
    unit: str = ""
    scale: float = 1.0
    text: bool = False
    mig: str = "parent"
    default: bool = False

    @property
    def sat(self) -> bool:
        """Whether the value is a GPM figure (the device's or a GPU instance's saturation)."""
        return self.source.startswith(SATURATION)

    @property
    def attr(self) -> str | None:
        """The model attribute read (of the device, or of its saturation); None where the value
        combines readings."""
        if self.source.startswith(COMBINED):
            return None
        return self.source.removeprefix(SATURATION)


@dataclass(frozen=True)
class Metric:
    """A field as served: under the name and type a counters file gives it (or the table's), with
    that file's help text, as dcgm-exporter serves whatever its file says."""

    name: str
    type: str
    help: str
    field: Field

    @property
    def label(self) -> bool:
        return self.type == "label"


@dataclass(frozen=True)
class Table:
    """The whole table: served fields by id, the reason for each field not served, and every name
    dcgm-exporter accepts (and DCGM 4.6's new names) with its field id."""

    fields: Mapping[int, Field]
    unserved: Mapping[int, str]
    names: Mapping[str, int]

    def field(self, name: str) -> Field | None:
        fid = self.names.get(name)
        return None if fid is None else self.fields.get(fid)

    def why_not(self, name: str) -> str | None:
        """Why gputop does not serve the field ``name`` (None: it does, or no such field)."""
        fid = self.names.get(name)
        return None if fid is None else self.unserved.get(fid)


def parse_table(doc: Mapping[str, Any]) -> Table:
    """The table from the data file's TOML; ValueError names what is wrong with it."""
    fields: dict[int, Field] = {}
    for row in doc.get("field", []):
        f = Field(id=row["id"], name=row["name"], type=row["type"], help=row["help"],
                  source=row["from"], unit=row.get("unit", ""), scale=float(row.get("scale", 1.0)),
                  text=row.get("text", False), mig=row.get("mig", "parent"),
                  default=row.get("default", False))
        if f.type not in TYPES or f.mig not in MIG_RULES or f.id in fields:
            raise ValueError(f"dcgm field {f.name}: bad type, mig rule or a second row")
        if f.text and f.type != "label":
            raise ValueError(f"dcgm field {f.name}: a text field can only be a label")
        fields[f.id] = f
    unserved = {fid: group["reason"] for group in doc.get("unserved", []) for fid in group["ids"]}
    names = {**doc.get("names", {}), **doc.get("names_dcgm_4_6", {})}
    both = sorted(set(fields) & set(unserved))
    if both:
        raise ValueError(f"dcgm fields both served and not: {both}")
    missing = [f.name for f in fields.values() if names.get(f.name) != f.id]
    if missing:
        raise ValueError(f"dcgm fields without their name in [names]: {missing}")
    return Table(fields=fields, unserved=unserved, names=names)


def _load() -> Table:
    text = datafiles.read_text("dcgm-fields.toml")
    return parse_table(tomllib.loads(text))


TABLE = _load()
FIELDS: tuple[Field, ...] = tuple(TABLE.fields.values())
BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}
# What the exporter serves without a counters file: dcgm-exporter's default counters, plus what
# its published dashboards and common alert rules need (the clock-event bitmask, power limits and
# clock maxima, fan, total memory, P-state, ECC and the other health counters).
DEFAULT: tuple[Metric, ...] = tuple(Metric(f.name, f.type, f.help, f) for f in FIELDS if f.default)


# ---------------------------------------------------------------- values

_COMPUTE_MODES = {name: n for n, name in enumerate(COMPUTE_MODES)}
_MIG_MODES = {"disabled": 0, "enabled": 1}

Value = float | str | None


def _pstate(snap: Snapshot, dev: Device, inst: MigInstance | None) -> Value:
    p = dev.pstate
    return float(p[1:]) if p is not None and p.startswith("P") and p[1:].isdigit() else None


def _compute_capability(snap: Snapshot, dev: Device, inst: MigInstance | None) -> Value:
    # DCGM's i64: the major version in the upper 32 bits, the minor in the lower
    cc = dev.compute_capability
    if cc is None or "." not in cc:
        return None
    major, minor = cc.split(".", 1)
    return str((int(major) << 32) | int(minor))


def _mapped(attr: str, table: Mapping[str, int]) -> Callable[[Snapshot, Device, Any], Value]:
    def read(snap: Snapshot, dev: Device, inst: MigInstance | None) -> Value:
        code = table.get(getattr(dev, attr) or "")
        return None if code is None else float(code)
    return read


def _fb_used_percent(snap: Snapshot, dev: Device, inst: MigInstance | None) -> Value:
    # DCGM: Used / (Total - Reserved), a ratio 0-1; a GPU instance has no reservation of its own
    reserved: float | None
    if inst is not None:
        used, total, reserved = inst.memory_used_mib, inst.memory_total_mib, 0.0
    else:
        used, total, reserved = dev.memory_used_mib, dev.memory_total_mib, dev.memory_reserved_mib
    if used is None or total is None or reserved is None or total - reserved <= 0:
        return None
    return used / (total - reserved)


def _nvlink_total(snap: Snapshot, dev: Device, inst: MigInstance | None) -> Value:
    # DCGM's field 449 is the current NVLink rate over all links (MB/s), whatever its type says.
    tx, rx = dev.saturation.nvlink_tx_mibps, dev.saturation.nvlink_rx_mibps
    if tx is None or rx is None:
        return None
    return (tx + rx) * MB_PER_MIB


COMBINATIONS: dict[str, Callable[[Snapshot, Device, Any], Value]] = {
    "driver_version": lambda snap, dev, inst: snap.driver_version,
    "count": lambda snap, dev, inst: float(len(snap.devices)),
    "pstate": _pstate,
    "compute_capability": _compute_capability,
    "compute_mode": _mapped("compute_mode", _COMPUTE_MODES),
    "mig_mode": _mapped("mig_mode", _MIG_MODES),
    "fb_used_percent": _fb_used_percent,
    "nvlink_total": _nvlink_total,
}


def _instance_free(inst: MigInstance) -> float | None:
    if inst.memory_total_mib is None or inst.memory_used_mib is None:
        return None
    return inst.memory_total_mib - inst.memory_used_mib


# A GPU instance's own memory figures; its reservation is not reported per instance.
_INSTANCE_MEMORY: dict[str, Callable[[MigInstance], float | None]] = {
    "memory_used_mib": lambda inst: inst.memory_used_mib,
    "memory_total_mib": lambda inst: inst.memory_total_mib,
    "memory_free_mib": _instance_free,
    "memory_reserved_mib": lambda inst: None,
}


# The Xid field: dcgm-exporter labels its series with the code and its text (err_code, err_msg).
XID_ERRORS = 230


@lru_cache(maxsize=1)
def _xid_texts() -> tuple[dict[int, str], str]:
    text = datafiles.read_text("dcgm-xid-errors.toml")
    data = tomllib.loads(text)
    return {int(k): str(v) for k, v in data["err_msg"].items()}, str(data["source"]["unknown"])


def xid_labels(code: int) -> dict[str, str]:
    """dcgm-exporter's labels on an Xid series: ``err_code`` and ``err_msg`` (its own text for
    the code, "Unknown Error" past its table), as its toMetric writes them."""
    texts, unknown = _xid_texts()
    return {"err_code": str(code), "err_msg": texts.get(code, unknown)}


def value(f: Field, snap: Snapshot, dev: Device, inst: MigInstance | None = None) -> Value:
    """``f`` for ``dev`` (or, under MIG, for its GPU instance ``inst``), in DCGM's unit: a number,
    the text of a text field, or None where there is nothing to serve."""
    if inst is not None and f.mig == "none":
        return None
    if f.source.startswith(COMBINED):
        got = COMBINATIONS[f.source[1:]](snap, dev, inst if f.mig == "instance" else None)
        if isinstance(got, float):
            return got * f.scale
        return got
    attr = f.source.removeprefix(SATURATION)
    if inst is not None and f.mig == "instance":
        raw = getattr(inst.saturation, attr) if f.sat else _INSTANCE_MEMORY[attr](inst)
    else:
        raw = getattr(dev.saturation if f.sat else dev, attr)
    if raw is None:
        return None
    if f.text:
        return str(raw)
    return float(raw) * f.scale


# ---------------------------------------------------------------- MIG
#
# On a MIG GPU dcgm-exporter (its default "-d f") watches each GPU instance instead of the GPU:
# every series carries the parent's gpu/UUID/device/modelName labels plus GPU_I_PROFILE and
# GPU_I_ID, and no series is left for the parent itself. Framebuffer and profiling fields are the
# instance's own; DCGM has no utilization fields under MIG (dcgm-exporter issues #105, #430);
# the other device fields (clocks, temperature, power, …) are the parent's, repeated per instance.


def gpu_instances(dev: Device) -> list[MigInstance]:
    """One MIG device per GPU instance (its first compute instance): DCGM watches GPU
    instances, whose memory and GPM its compute instances share."""
    seen: dict[int, MigInstance] = {}
    for inst in dev.mig_instances:
        seen.setdefault(inst.gpu_instance_id, inst)
    return list(seen.values())
