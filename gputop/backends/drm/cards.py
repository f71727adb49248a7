"""Find the cards a driver drives under ``ROOT/sys/class/drm``, and their fixed paths.

A card is ``cardN`` whose ``device`` folder is a PCI function bound to one of the drivers asked
for: the driver named by ``device/uevent`` (``DRIVER=``), else by the ``device/driver`` link.
Other drivers' cards are passed over and named in the reason given when none is left. Connector
entries (``card0-DP-1``) and render nodes are not cards.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass

from gputop.backends.drm.files import Files

DRM_DIR = "sys/class/drm"
_CARD = re.compile(r"card(\d+)$")
_PCI_ADDRESS = re.compile(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


@dataclass(frozen=True)
class Card:
    """One card: where its files are and what its uevent says about it."""

    number: int  # the N of cardN
    device: str  # the card's PCI device folder (…/cardN/device)
    hwmon: str | None  # its hwmon folder; None on a card without one (some accelerators)
    bus_id: str | None  # "0000:0c:00.0"
    pci_id: tuple[int, int] | None  # (vendor, device): (0x1002, 0x73BF)
    subsystem_id: tuple[int, int] | None  # (subsystem vendor, subsystem device)
    driver: str = ""  # the kernel driver bound to it: "amdgpu", "i915", "xe"

    @property
    def folder(self) -> str:
        """The DRM card's own folder (…/cardN), where i915 prints its gt_* clocks."""
        return os.path.dirname(self.device)


def parse_uevent(text: str) -> dict[str, str]:
    """``KEY=value`` lines of a uevent file."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _id_pair(text: str | None) -> tuple[int, int] | None:
    """``1002:73BF`` → (0x1002, 0x73BF)."""
    if not text:
        return None
    left, sep, right = text.partition(":")
    try:
        return (int(left, 16), int(right, 16)) if sep else None
    except ValueError:
        return None


def drm_dir(root: str) -> str:
    return os.path.join(root, DRM_DIR)


def _card_names(root: str) -> list[tuple[int, str]]:
    try:
        names = os.listdir(drm_dir(root))
    except OSError:
        return []
    found = [(int(m.group(1)), name) for name in names if (m := _CARD.match(name))]
    return sorted(found)


def _driver(files: Files, device: str, uevent: dict[str, str]) -> str | None:
    if uevent.get("DRIVER"):
        return uevent["DRIVER"]
    try:
        return os.path.basename(os.readlink(os.path.join(device, "driver")))
    except OSError:
        return None


def _hwmon(device: str) -> str | None:
    folder = os.path.join(device, "hwmon")
    try:
        names = sorted(n for n in os.listdir(folder) if n.startswith("hwmon"))
    except OSError:
        return None
    for name in names:
        path = os.path.join(folder, name)
        if os.path.isdir(path):
            return path
    return None


def find_cards(root: str, files: Files, drivers: Collection[str]
               ) -> tuple[list[Card], list[str]]:
    """The cards under ``root`` bound to one of ``drivers``, in card order, and for each card
    passed over why ("card0: radeon"). Two cards on one PCI function are one card (the first)."""
    cards: list[Card] = []
    passed: list[str] = []
    seen_bus: set[str] = set()
    for number, name in _card_names(root):
        device = os.path.join(drm_dir(root), name, "device")
        if not os.path.isdir(device):
            continue
        uevent = parse_uevent(files.text(os.path.join(device, "uevent")) or "")
        driver = _driver(files, device, uevent)
        if driver not in drivers:
            passed.append(f"{name}: {driver or 'no driver'}")
            continue
        bus_id = uevent.get("PCI_SLOT_NAME") or _bus_from_path(device)
        if bus_id is not None:
            if bus_id in seen_bus:
                continue
            seen_bus.add(bus_id)
        cards.append(Card(number=number, device=device, hwmon=_hwmon(device), bus_id=bus_id,
                          pci_id=_id_pair(uevent.get("PCI_ID")),
                          subsystem_id=_id_pair(uevent.get("PCI_SUBSYS_ID")),
                          driver=driver or ""))
    return cards, passed


def _bus_from_path(device: str) -> str | None:
    """The PCI address the ``device`` link resolves to (…/0000:0c:00.0), where it is one."""
    name = os.path.basename(os.path.realpath(device))
    return name if _PCI_ADDRESS.match(name) else None


def present(root: str, drivers: Collection[str]) -> bool:
    """Whether any card bound to one of ``drivers`` is under ``root`` (cheap: what
    auto-detection asks first)."""
    return bool(find_cards(root, Files(), drivers)[0])


def kernel_release(root: str, files: Files, modules: Collection[str] = ()) -> str | None:
    """The driver's version: a module's own where it is a packaged (DKMS) build and prints one
    (``sys/module/<module>/version``), else the kernel's release, whose in-tree driver it is."""
    rels = [f"sys/module/{module}/version" for module in modules]
    for rel in (*rels, "proc/sys/kernel/osrelease"):
        text = files.text(os.path.join(root, rel))
        if text:
            return text
    return None
