"""One snapshot as each of nvidia-smi's faces: the table, `-L`, `-q` (with `-d`) and `-q -x`.

Pure: a snapshot and a request in, text out. The layouts come from real captures
(gputop.smi.layouts, gputop.formats.smi_table); the values from the model, or N/A.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputop.core.model import Device, Snapshot
from gputop.formats import smi_doc, smi_table
from gputop.formats.query_csv import process_name
from gputop.formats.smi_capture import CapturedDevice
from gputop.smi import layouts
from gputop.smi.request import DISPLAY, SmiRequest
from gputop.smi.sources import GpuSource, HeadSource


@dataclass(frozen=True, slots=True)
class Node:
    """What every face needs besides the devices shown."""

    snapshot: Snapshot  # the chosen devices only
    count: int  # the node's GPUs, chosen or not ("Attached GPUs")
    processes_known: bool  # the backend reads process lists


def generation(snap: Snapshot) -> str:
    return layouts.generation(snap.driver_version, [d.vendor for d in snap.devices])


def table(node: Node) -> str:
    snap = node.snapshot
    rows = [smi_table.TableRow(d, [process_name(p) for p in d.processes])
            for d in snap.devices]
    gen = generation(snap)
    return smi_table.render(rows, snap.time, gen, snap.driver_version, snap.cuda_version,
                            layout_version=gen)


def _list_lines(dev: Device) -> list[str]:
    if isinstance(dev, CapturedDevice) and dev.listed_migs:  # a replayed -L: its own MIG lines
        return [*smi_table.list_line(dev)[:1], *dev.listed_migs]
    return smi_table.list_line(dev)


def gpu_list(node: Node) -> str:
    return "".join(line + "\n" for d in node.snapshot.devices for line in _list_lines(d))


def query(node: Node, xml: bool, display: tuple[str, ...] = ()) -> str:
    snap = node.snapshot
    lay = layouts.layout(xml, layouts.claim(generation(snap), xml))
    only = frozenset(k for t in display for k in DISPLAY[t]) if display else None
    gpus = [GpuSource(snap, d, node.count, xml, node.processes_known) for d in snap.devices]
    return smi_doc.render(lay, HeadSource(snap, node.count, xml), gpus, only=only)


def answer(request: SmiRequest, node: Node) -> str:
    """The text of one report."""
    if request.face == "table":
        return table(node)
    if request.face == "list":
        return gpu_list(node)
    return query(node, request.face == "qx", request.display)


__all__ = ["Node", "answer", "generation", "gpu_list", "query", "table"]
