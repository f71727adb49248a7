"""`-i/--id` device selection: indices, UUIDs (or unique prefixes) and PCI bus ids, comma lists."""

from __future__ import annotations

from collections.abc import Sequence

from gputop.core.errors import UsageError
from gputop.core.model import DeviceInfo


def _bus_key(bus_id: str) -> str:
    # nvidia-smi accepts "18:00.0", "0000:18:00.0" and "00000000:18:00.0" for the same device.
    parts = bus_id.lower().split(":")
    if len(parts) == 3:
        parts = parts[1:]
    return ":".join(p.lstrip("0") or "0" for p in parts)


def select_devices(spec: str | None, devices: Sequence[DeviceInfo]) -> list[int] | None:
    """Return the chosen indices in the order given, or None for all. Raises UsageError."""
    if spec is None or spec.strip() == "":
        return None
    chosen: list[int] = []
    for raw in spec.split(","):
        token = raw.strip()
        if not token:
            raise UsageError(f"empty device id in {spec!r}")
        index = _match(token, devices)
        if index is None:
            raise UsageError(f"no device matches id {token!r}")
        if index in chosen:
            raise UsageError(f"-i/--id {spec!r} names device {index} twice")
        chosen.append(index)
    return chosen


def _match(token: str, devices: Sequence[DeviceInfo]) -> int | None:
    if token.isdigit():
        idx = int(token)
        return idx if any(d.index == idx for d in devices) else None
    low = token.lower()
    by_uuid = [d.index for d in devices if d.uuid and d.uuid.lower().startswith(low)]
    if len(by_uuid) == 1:
        return by_uuid[0]
    if len(by_uuid) > 1:
        raise UsageError(f"device id {token!r} matches more than one UUID")
    if ":" in token:
        key = _bus_key(token)
        for d in devices:
            if d.pci_bus_id and _bus_key(d.pci_bus_id) == key:
                return d.index
    return None
