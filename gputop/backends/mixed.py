"""A node with GPUs of more than one vendor: several open backends read as one.

Auto-detection builds it where more than one real backend opens (NVML and an amdgpu card, say).
Its devices are its children's in their order, numbered on: the first child's keep their indices,
the next child's follow them. Each device keeps its own vendor; the node's backend is the
children's names joined by ``+`` ("nvml+amd"), and its driver and CUDA versions are the first
child's that has them (NVML, first in the order, so that nvidia-smi's faces read NVIDIA's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gputop.backends.base import Backend, BackendError
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, DeviceInfo, NodeInfo, Snapshot

SEPARATOR = "+"


def members(name: str) -> tuple[str, ...]:
    """Split a backend's name into the backends it reads through ("nvml+amd" -> nvml, amd; a
    single backend's name is itself), so a consumer asks what a node has without knowing how
    a mixed node is named."""
    return tuple(name.split(SEPARATOR))


@dataclass(frozen=True)
class _Slot:
    """Where one of the node's devices lives: its backend and its index there."""

    child: Backend
    local: int
    info: DeviceInfo


class MixedBackend(Backend):
    """Read several open backends as one node; owns them (close() closes each)."""

    def __init__(self, children: Sequence[Backend]) -> None:
        if len(children) < 2:
            raise ValueError("a mixed node needs two backends or more")
        self.children = tuple(children)
        self.name = SEPARATOR.join(c.name for c in self.children)
        self.capabilities = frozenset(cap for c in self.children for cap in c.capabilities)
        self._slots: list[_Slot] = []
        self._info: NodeInfo | None = None

    def open(self) -> None:
        """Number the children's devices on, one after the other (the children are open)."""
        slots: list[_Slot] = []
        infos = [c.info() for c in self.children]
        for child, info in zip(self.children, infos):
            for local, dev in enumerate(info.devices):
                slots.append(_Slot(child, local, replace(dev, index=len(slots))))
        self._slots = slots
        driver = next((i.driver_version for i in infos if i.driver_version), None)
        cuda = next((i.cuda_version for i in infos if i.cuda_version), None)
        self._info = NodeInfo(infos[0].host, self.name, driver, cuda,
                              tuple(s.info for s in slots))

    def close(self) -> None:
        """Close every child, each even where one before it fails."""
        errors: list[BaseException] = []
        for child in self.children:
            try:
                child.close()
            except Exception as exc:  # the others still hold their handles: close them too
                errors.append(exc)
        if errors:
            raise errors[0]

    def info(self) -> NodeInfo:
        if self._info is None:
            raise BackendError("mixed backend not open")
        return self._info

    def notes(self) -> tuple[str, ...]:
        return tuple(note for child in self.children for note in child.notes())

    def sample(self, devices: Sequence[int] | None = None, *,
               wants: Wants | None = EVERYTHING) -> Snapshot:
        """Sample each child for its share of ``devices`` and merge the snapshots in the order
        asked. A child that fails marks its devices lost; the other vendors' carry on."""
        info = self.info()
        wanted = range(len(self._slots)) if devices is None else devices
        asked: dict[Backend, list[int]] = {}  # child -> the node's indices asked of it
        for g in wanted:
            asked.setdefault(self._slot(g).child, []).append(g)
        got: dict[int, Device] = {}
        for child in self.children:
            mine = asked.get(child)
            if not mine:
                continue
            try:
                snap = child.sample([self._slots[g].local for g in mine], wants=wants)
                for g, dev in zip(mine, snap.devices, strict=True):
                    got[g] = replace(dev, index=g)
            # As the sampler does for a whole node: one vendor's failure (a driver unloaded, a
            # tool gone) must not blank the other vendor's GPUs.
            except Exception as exc:
                for g in mine:
                    got[g] = self._lost(g, exc)
        return Snapshot(host=info.host, time=self.clock.wall(), backend=self.name,
                        devices=tuple(got[g] for g in wanted),
                        driver_version=info.driver_version, cuda_version=info.cuda_version)

    def set_power_limit(self, device: int, watts: float) -> None:
        """Set it through the backend that owns ``device``, by its index there."""
        slot = self._slot(device)
        slot.child.set_power_limit(slot.local, watts)

    def _slot(self, device: int) -> _Slot:
        if not 0 <= device < len(self._slots):
            raise BackendError(f"no GPU {device}")
        return self._slots[device]

    def _lost(self, g: int, exc: Exception) -> Device:
        slot = self._slots[g]
        i = slot.info
        return Device(index=g, uuid=i.uuid, name=i.name, vendor=i.vendor,
                      pci_bus_id=i.pci_bus_id, status="lost",
                      status_reason=f"the {slot.child.name} backend failed: {exc}")
