"""A card's product name: its own ``product_name``, else libdrm's ``amdgpu.ids`` table, else the
PCI id ("AMD GPU 1002:73BF"), so that every card has a name and none is made up.

``amdgpu.ids`` (shipped by libdrm; Mesa and amd-smi read the same file) maps a device id and PCI
revision to the marketing name: "73BF,\tC0,\tAMD Radeon RX 6900 XT". It is looked up where
distributions and AMD's packages install it, under the same root as sysfs.
"""

from __future__ import annotations

import os

from gputop.backends.drm.files import Files

IDS_PATHS = ("usr/share/libdrm/amdgpu.ids", "opt/amdgpu/share/libdrm/amdgpu.ids")
AMD_VENDOR_ID = 0x1002

AmdgpuIds = dict[tuple[int, int], str]


def parse_ids(text: str) -> AmdgpuIds:
    """``{(device id, revision): name}`` from an amdgpu.ids file (comments and the version
    line skipped)."""
    out: AmdgpuIds = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) != 3 or line.startswith("#"):
            continue
        try:
            out.setdefault((int(parts[0], 16), int(parts[1], 16)), parts[2])
        except ValueError:
            continue
    return out


def load_ids(root: str, files: Files) -> AmdgpuIds:
    """The first amdgpu.ids found under ``root``; empty where there is none."""
    for rel in IDS_PATHS:
        text = files.text(os.path.join(root, rel))
        if text:
            return parse_ids(text)
    return {}


def product_name(own: str | None, pci_id: tuple[int, int] | None, revision: int | None,
                 ids: AmdgpuIds) -> str:
    """The name to show for a card (see the module's docstring)."""
    if own:
        return own
    if pci_id is not None and revision is not None:
        found = ids.get((pci_id[1], revision))
        if found:
            return found
    if pci_id is not None:
        return f"AMD GPU {pci_id[0]:04X}:{pci_id[1]:04X}"
    return "AMD GPU"
