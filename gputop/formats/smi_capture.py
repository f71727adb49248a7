"""A real nvidia-smi capture (the table, `-L`, `-q` or `-q -x`) read back into the model.

What the model holds is parsed into it (through the same tables that write it: smi_fields,
smi_table); what it does not hold stays with the device as the capture's own text
(:class:`CapturedDevice`), so that writing the capture's node in the capture's own layout gives
the capture back. This is how `gputop --backend replay --replay CAPTURE` turns a capture into a
node, and how the tests check the personality against real output, byte for byte.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace

from gputop.core.clock_events import REASONS
from gputop.core.model import Device, MigInstance, Process
from gputop.formats import smi_doc, smi_fields
from gputop.formats.smi_table import FULL_MODES, TableMig


class CaptureError(ValueError):
    """Text that is no nvidia-smi capture gputop can read."""


@dataclass(frozen=True, slots=True)
class CapturedDevice(Device):
    """A device read from a capture, with what the model does not hold."""

    reported: smi_doc.Node | None = None  # a -q or -q -x capture's GPU block
    reported_xml: bool = False
    listed_migs: tuple[str, ...] = ()  # -L's MIG lines: they name no GPU or compute instance


@dataclass(frozen=True, slots=True)
class Capture:
    kind: str  # "table", "list", "q" or "qx"
    time: float | None
    driver_version: str | None
    cuda_version: str | None
    smi_version: str | None
    devices: tuple[CapturedDevice, ...]
    document: smi_doc.Document | None = None  # -q, -q -x: the capture's own layout


def kind(text: str) -> str | None:
    """Which face ``text`` is ("table", "list", "q", "qx"), judged by its first lines; None:
    none of them."""
    stripped = text.lstrip()
    if stripped.startswith("GPU ") and "(UUID: " in stripped.split("\n", 1)[0]:
        return "list"
    if smi_doc.is_xml(text):
        return "qx"
    if "==============NVSMI LOG==============" in text[:200]:
        return "q"
    if "| NVIDIA-SMI " in text[:400]:
        return "table"
    return None


def read(text: str) -> Capture:
    """Any of the four faces; raises CaptureError naming what is wrong."""
    face = kind(text)
    try:
        if face == "list":
            return _read_list(text)
        if face in ("q", "qx"):
            return _read_document(smi_doc.parse(text))
        if face == "table":
            return _read_table(text)
    except smi_doc.DocumentError as exc:
        raise CaptureError(str(exc)) from None
    raise CaptureError("not an nvidia-smi capture (table, -L, -q or -q -x)")


def parse_stamp(text: str) -> float | None:
    try:
        return time.mktime(time.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y"))
    except ValueError:
        return None


# ---------------------------------------------------------------- -L


_LIST_GPU = re.compile(r"^GPU (\d+): (.*) \(UUID: (.*)\)$")
_LIST_MIG = re.compile(r"^  MIG (\S+) +Device +(\d+): \(UUID: (.*)\)$")


def _read_list(text: str) -> Capture:
    devices: list[CapturedDevice] = []
    for number, line in enumerate(text.splitlines(), 1):
        if m := _LIST_GPU.match(line):
            devices.append(CapturedDevice(index=int(m.group(1)), name=m.group(2),
                                          uuid=m.group(3), vendor="nvidia"))
        elif _LIST_MIG.match(line) and devices:
            # A MIG line names no GPU or compute instance, which a MigInstance must have: it
            # stays text, written back as it came.
            devices[-1] = replace(devices[-1], listed_migs=(*devices[-1].listed_migs, line))
        elif line.strip():
            raise CaptureError(f"-L line {number} is neither a GPU nor a MIG device: {line!r}")
    return Capture("list", None, None, None, None, tuple(devices))


# ---------------------------------------------------------------- the table


_BANNER = re.compile(r"^\| NVIDIA-SMI (\S+) +Driver Version: (\S+) +CUDA Version: (\S+) +\|$")
_ROW1 = re.compile(r"^\| +(\d+)  (.{27})    (\S+) +\| +(\S+) +(\S+) \| +(\S+) \|$")
_ROW2 = re.compile(r"^\| +(\S+) +(\S+) +(\S+) +(\S+) / +(\S+) \| +(\S+) / +(\S+) \| +(\S+) +"
                   r"(.+?) \|$")
_ROW3 = re.compile(r"^\| {41}\| {24}\| +(\S+) \|$")
_PROC = re.compile(r"^\| +(\d+) +(\S+) +(\S+) +(\d+) +(\S+)   (.{32}|.{38})  +(\S+) \|$")
_MIG1 = re.compile(r"^\| +(\d+) +(\d+) +(\d+) +(\S+)  \| +(\S+) / +(\S+) +\| (\S+) +(\S+) \| "
                   r"(.{21}) \|$")
_MIG2 = re.compile(r"^\| {18}\| +(\S+ / +\S+) +\| {11}\| {23}\|$")


def _num(text: str, unit: str = "") -> float | None:
    if unit and text.endswith(unit):
        text = text[: -len(unit)]
    try:
        return float(text)
    except ValueError:
        return None


def _flag(text: str) -> bool | None:
    return {"On": True, "Off": False}.get(text)


def _id(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def _read_table(text: str) -> Capture:
    lines = text.splitlines()
    stamp = parse_stamp(lines[0]) if lines and not lines[0].startswith(("+", "|")) else None
    banner = next((m for line in lines[:4] if (m := _BANNER.match(line))), None)
    if banner is None:
        raise CaptureError("table: no `NVIDIA-SMI … Driver Version … CUDA Version` banner"
                           " (the 550-595 layout is read)")
    devices: list[CapturedDevice] = []
    procs: dict[int, list[Process]] = {}
    migs: dict[int, list[MigInstance]] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if (m1 := _ROW1.match(line)) and i + 2 < len(lines):
            m2, m3 = _ROW2.match(lines[i + 1]), _ROW3.match(lines[i + 2])
            if not (m2 and m3):
                raise CaptureError(f"table line {i + 2}: not a GPU row: {lines[i + 1]!r}")
            devices.append(_table_device(m1, m2, m3))
            i += 3
            continue
        if (m := _MIG1.match(line)) and i + 1 < len(lines) and (b := _MIG2.match(lines[i + 1])):
            dev = int(m.group(1))
            migs.setdefault(dev, []).append(TableMig(
                gpu_instance_id=int(m.group(2)), compute_instance_id=int(m.group(3)),
                index=_id(m.group(4)), memory_used_mib=_num(m.group(5), "MiB"),
                memory_total_mib=_num(m.group(6), "MiB"), sm_count=_id(m.group(7)),
                bar1=b.group(1), ecc=m.group(8), engines=m.group(9)))
            i += 2
            continue
        if m := _PROC.match(line):
            procs.setdefault(int(m.group(1)), []).append(Process(
                pid=int(m.group(4)), name=m.group(6).rstrip(), type=m.group(5),
                gpu_memory_mib=_num(m.group(7), "MiB"), gpu_instance_id=_id(m.group(2)),
                compute_instance_id=_id(m.group(3))))
        i += 1
    if not devices:
        raise CaptureError("table: no GPU rows")
    devices = [replace(d, processes=tuple(procs.get(d.index, ())),
                       mig_instances=tuple(migs.get(d.index, ()))) for d in devices]
    smi, driver, cuda = banner.groups()
    return Capture("table", stamp, driver, cuda, smi, tuple(devices))


def _table_device(m1: re.Match[str], m2: re.Match[str], m3: re.Match[str]) -> CapturedDevice:
    index, name, persistence, bus, disp, ecc = m1.groups()
    fan, temp, pstate, power, cap, used, total, util, mode = m2.groups()
    mig = m3.group(1)
    ecc_mode = {"Off": False, "N/A": None}.get(ecc, True)
    return CapturedDevice(
        index=int(index), name=name.rstrip(), vendor="nvidia", pci_bus_id=bus,
        persistence_mode=_flag(persistence), display_active=_flag(disp),
        ecc_mode=ecc_mode, ecc_errors_uncorrected_volatile=_id(ecc),
        fan_pct=_num(fan, "%"), temperature_c=_num(temp, "C"),
        pstate=None if pstate == "N/A" else pstate,
        power_draw_w=_num(power, "W"), power_limit_w=_num(cap, "W"),
        memory_used_mib=_num(used, "MiB"), memory_total_mib=_num(total, "MiB"),
        utilization_gpu_pct=_num(util, "%"),
        compute_mode=FULL_MODES.get(mode.strip(), mode.strip()),
        mig_mode=None if mig == "N/A" else mig.lower())


# ---------------------------------------------------------------- -q and -q -x


def _read_document(doc: smi_doc.Document) -> Capture:
    head = smi_doc.head_source(doc)
    keys = ("timestamp", "driver_version", "cuda_version") if doc.xml else (
        "Timestamp", "Driver Version", "CUDA Version")
    stamp, driver, cuda = (head.value((k,)) for k in keys)
    devices = tuple(_document_device(doc, n, node) for n, node in enumerate(doc.gpus))
    return Capture("qx" if doc.xml else "q", parse_stamp(stamp) if stamp else None, driver,
                   cuda, driver, devices, doc)


def _document_device(doc: smi_doc.Document, index: int, node: smi_doc.Node) -> CapturedDevice:
    source = smi_doc.Captured(node)
    values: dict[str, object] = {}
    mask = 0
    seen_reason = False
    for place in smi_fields.PLACES:
        for path in place.xml if doc.xml else place.text:
            raw = source.value(path)
            if raw is None:
                continue
            value = smi_fields.read(place, raw)
            name = place.field.name
            if name.startswith("clocks_event_reasons.") and value is not None:
                seen_reason = True
                if value:
                    mask |= REASONS[name.split(".", 1)[1]]
            elif place.field.attr is not None:
                values[place.field.attr] = value
            break
    if seen_reason:
        values["clock_event_mask"] = mask
    procs = tuple(_process(p, doc.xml) for p in source.items(PROCESS_LIST[doc.xml]) or ())
    migs = tuple(_mig(m, doc.xml) for m in source.items(MIG_LIST[doc.xml]) or ())
    values.setdefault("pci_bus_id", node.value)
    return CapturedDevice(index=index, vendor="nvidia", processes=procs, mig_instances=migs,
                          reported=node, reported_xml=doc.xml, **values)  # type: ignore[arg-type]


# The lists of a -q document (their paths by XML?) and the labels of an entry.
PROCESS_LIST = {False: ("Processes", "#item"), True: ("processes", "process_info")}
MIG_LIST = {False: ("MIG Device",), True: ("mig_devices", "mig_device")}
PROCESS_KEYS: dict[bool, dict[str, smi_doc.Path]] = {
    False: {"gi": ("GPU instance ID",), "ci": ("Compute instance ID",), "pid": ("Process ID",),
            "type": ("Process ID", "Type"), "name": ("Process ID", "Name"),
            "memory": ("Process ID", "Used GPU Memory")},
    True: {"gi": ("gpu_instance_id",), "ci": ("compute_instance_id",), "pid": ("pid",),
           "type": ("type",), "name": ("process_name",), "memory": ("used_memory",)},
}
MIG_KEYS: dict[bool, dict[str, smi_doc.Path]] = {
    False: {"index": ("Index",), "gi": ("GPU Instance ID",), "ci": ("Compute Instance ID",),
            "sm": ("Device Attributes", "Shared", "Multiprocessor count"),
            "total": ("Shared FB Memory Usage", "Total"), "used": ("Shared FB Memory Usage", "Used")},
    True: {"index": ("index",), "gi": ("gpu_instance_id",), "ci": ("compute_instance_id",),
           "sm": ("device_attributes", "shared", "multiprocessor_count"),
           "total": ("fb_memory_usage", "total"), "used": ("fb_memory_usage", "used")},
}


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


def _process(source: smi_doc.Source, xml: bool) -> Process:
    k = PROCESS_KEYS[xml]
    return Process(pid=_int(source.value(k["pid"])) or 0, name=source.value(k["name"]),
                   type=source.value(k["type"]),
                   gpu_memory_mib=_num(source.value(k["memory"]) or "", " MiB"),
                   gpu_instance_id=_int(source.value(k["gi"])),
                   compute_instance_id=_int(source.value(k["ci"])))


def _mig(source: smi_doc.Source, xml: bool) -> MigInstance:
    k = MIG_KEYS[xml]
    return MigInstance(gpu_instance_id=_int(source.value(k["gi"])) or 0,
                       compute_instance_id=_int(source.value(k["ci"])) or 0,
                       index=_int(source.value(k["index"])), sm_count=_int(source.value(k["sm"])),
                       memory_total_mib=_num(source.value(k["total"]) or "", " MiB"),
                       memory_used_mib=_num(source.value(k["used"]) or "", " MiB"))


__all__ = ["MIG_KEYS", "MIG_LIST", "PROCESS_KEYS", "PROCESS_LIST", "Capture", "CaptureError",
           "CapturedDevice", "kind", "parse_stamp", "read"]
