"""What a backend reading a DRM driver's sysfs and /proc/PID/fdinfo does whatever the vendor:
find the driver's cards under a root folder, read the static facts once, sample only the reads
the consumers want, mark a card whose folder disappeared ``lost``, attribute the DRM clients of
``/proc`` to the cards, and say once what a refused read would need.

A vendor's backend (amd, intel) says which drivers, and fills in what differs: a card's
description (`describe`), its reads (`read`, `READ_OF`), its fdinfo keys (`parse_client`) and how
a process's clients become what it holds (`held`).
"""

from __future__ import annotations

import os
import threading
from abc import abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from gputop.backends.base import (
    CAP_PROCESSES,
    REAL_CLOCK,
    Backend,
    BackendError,
    BackendOptions,
    BackendUnavailable,
    Clock,
    hostname,
)
from gputop.backends.drm import fdinfo
from gputop.backends.drm.cards import Card, drm_dir, find_cards, kernel_release
from gputop.backends.drm.files import Files
from gputop.backends.drm.processes import Held, processes
from gputop.backends.drm.rates import Rates
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, DeviceInfo, NodeInfo, Process, Snapshot
from gputop.host.processes import HostProcesses

PROCESSES = "processes"
# What to say, once, where the kernel refused a read for lack of permission.
PROCESS_NOTE = ("{label}: the processes of other users are not listed: reading /proc/PID/fdinfo "
                "of another user's process needs root or CAP_SYS_PTRACE")
FILES_NOTE = "{label}: {count} sysfs file(s) could not be read without more permission, e.g. {path}"

T = TypeVar("T")  # what a vendor's reads take for one card
C = TypeVar("C", bound=fdinfo.Client)


@dataclass
class Gpu(Generic[T]):
    card: Card
    target: T
    info: DeviceInfo
    static: dict[str, Any]


class DrmBackend(Backend, Generic[T, C]):
    capabilities = frozenset({CAP_PROCESSES})
    vendor: ClassVar[str]
    drivers: ClassVar[tuple[str, ...]]
    # attribute -> the name of the read that fills it; every read, for a consumer that wants all
    READ_OF: ClassVar[Mapping[str, str]]
    READS: ClassVar[Sequence[str]]

    def __init__(self, options: BackendOptions, clock: Clock = REAL_CLOCK,
                 host: HostProcesses | None = None) -> None:
        self.options = options
        self.root = options.sysfs_root or "/"
        self.clock = clock
        self.host = host or HostProcesses()
        self.files = Files()
        self.shares = Rates()  # the processes' engine counters
        self._gpus: list[Gpu[T]] = []
        self._info: NodeInfo | None = None
        self._lock = threading.Lock()
        self._denied_pids = 0

    @property
    def label(self) -> str:
        """How messages name the drivers: "amdgpu", "i915/xe"."""
        return "/".join(self.drivers)

    # ------------------------------------------------------------------ what a vendor fills in
    @abstractmethod
    def describe(self, index: int, card: Card) -> tuple[T, DeviceInfo, dict[str, Any]]:
        """What the reads of one card take, its static description, and the static facts as
        Device attributes (read once)."""

    @abstractmethod
    def read(self, gpu: Gpu[T], todo: Sequence[str]) -> dict[str, Any]:
        """The Device attributes the reads named in ``todo`` fill."""

    @staticmethod
    @abstractmethod
    def parse_client(text: str) -> C | None:
        """The driver's client an fdinfo file describes; None for any other."""

    @abstractmethod
    def held(self, key: tuple[str, int], clients: list[C], now: float
             ) -> tuple[Held, list[Hashable]]:
        """What one process holds on one card, from its clients, and the keys of `shares` it
        keeps readings under (the others are forgotten)."""

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        cards, passed = find_cards(self.root, self.files, self.drivers)
        if not cards:
            why = f" ({', '.join(passed)})" if passed else ""
            raise BackendUnavailable(f"{self.label}: no card under {drm_dir(self.root)} is "
                                     f"driven by {' or '.join(self.drivers)}{why}")
        gpus = []
        for index, card in enumerate(cards):
            target, info, static = self.describe(index, card)
            gpus.append(Gpu(card, target, info, static))
        self._gpus = gpus
        self._info = NodeInfo(hostname(), self.name,
                              kernel_release(self.root, self.files, self.drivers), None,
                              tuple(g.info for g in gpus))

    def info(self) -> NodeInfo:
        if self._info is None:
            raise BackendError(f"{self.name} backend not open")
        return self._info

    def limit_commands(self, limits: Mapping[int, float]) -> list[str]:
        """Return no command: a DRM driver's limits are written (if at all) by its own backend."""
        return []

    def notes(self) -> tuple[str, ...]:
        out = []
        if self._denied_pids:
            out.append(PROCESS_NOTE.format(label=self.label))
        denied = sorted(self.files.denied)
        if denied:
            out.append(FILES_NOTE.format(label=self.label, count=len(denied), path=denied[0]))
        return tuple(out)

    # ------------------------------------------------------------------ sampling
    def sample(self, devices: Sequence[int] | None = None, *,
               wants: Wants | None = EVERYTHING) -> Snapshot:
        info = self.info()
        with self._lock:
            wanted = range(len(self._gpus)) if devices is None else devices
            chosen = [self._gpus[i] for i in wanted]
            todo = list(self.READS) if wants is None else sorted(
                {self.READ_OF[a] for a in wants if a in self.READ_OF})
            live = [g for g in chosen if os.path.isdir(g.card.device)]
            procs = (self._processes(live)
                     if wants is None or PROCESSES in wants else {})
            out = [self._device(g, todo, procs.get(g.info.index, ()))
                   if g in live else self._lost(g) for g in chosen]
        return Snapshot(host=info.host, time=self.clock.wall(), backend=self.name,
                        devices=tuple(out), driver_version=info.driver_version)

    def _device(self, gpu: Gpu[T], todo: list[str], processes: tuple[Process, ...]) -> Device:
        return Device(**self._identity(gpu), **gpu.static, **self.read(gpu, todo),
                      processes=processes)

    def _identity(self, gpu: Gpu[T]) -> dict[str, Any]:
        info = gpu.info
        return dict(index=info.index, name=info.name, vendor=self.vendor,
                    pci_bus_id=info.pci_bus_id)

    def _lost(self, gpu: Gpu[T]) -> Device:
        return Device(**self._identity(gpu), **gpu.static, status="lost",
                      status_reason=f"{gpu.card.device} is gone (unplugged, or the driver "
                                    "unbound)")

    # ------------------------------------------------------------------ processes
    def _processes(self, gpus: list[Gpu[T]]) -> dict[int, tuple[Process, ...]]:
        by_bus = {g.card.bus_id: g for g in gpus if g.card.bus_id is not None}
        found = fdinfo.scan(os.path.join(self.root, "proc"), self.files, by_bus,
                            self.parse_client)
        self._denied_pids = found.denied
        now = self.clock.monotonic()
        out: dict[int, tuple[Process, ...]] = {}
        keys: list[Hashable] = []
        all_pids: list[int] = []
        for bus, clients in found.by_card.items():
            held = {}
            for pid, mine in clients.items():
                held[pid], kept = self.held((bus, pid), mine, now)
                keys.extend(kept)
            out[by_bus[bus].info.index] = processes(self.host, bus, held)
            all_pids.extend(clients)
        self.shares.prune(keys)
        self.host.prune(all_pids)
        return out
