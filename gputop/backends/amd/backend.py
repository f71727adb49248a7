"""The AMD backend: amdgpu cards read from sysfs and their processes from /proc/PID/fdinfo.

No library and no tool: every figure is a file the amdgpu driver prints, read under a root folder
(``--sysfs-root``, "/" by default; a container mounts the host's /sys and /proc there, and the
tests a captured tree). What is read, from where and with which permission is in
docs/backends.md. A value a card does not print is None, never 0.

Each sample reads only what the running consumers want (`reads.READS`); the static facts are read
once in open(). A card whose folder disappears (hot-unplugged, driver unbound) is ``lost``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gputop.backends.amd import fdinfo, names, reads
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
from gputop.backends.drm import fdinfo as drm_fdinfo
from gputop.backends.drm.cards import Card, drm_dir, find_cards, kernel_release
from gputop.backends.drm.files import Files
from gputop.backends.drm.processes import Held, processes
from gputop.backends.drm.rates import NS_PER_S, Rates, percent
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, DeviceInfo, NodeInfo, Process, Snapshot
from gputop.host.processes import HostProcesses

VENDOR = "amd"
PROCESSES = "processes"
# What to say, once, where the kernel refused a read for lack of permission.
PROCESS_NOTE = ("amdgpu: the processes of other users are not listed: reading /proc/PID/fdinfo "
                "of another user's process needs root or CAP_SYS_PTRACE")
FILES_NOTE = "amdgpu: {count} sysfs file(s) could not be read without more permission, e.g. {path}"


@dataclass
class _Gpu:
    card: Card
    info: DeviceInfo
    static: dict[str, Any]
    values: dict[str, Any] = field(default_factory=dict)


class AmdBackend(Backend):
    name = "amd"
    capabilities = frozenset({CAP_PROCESSES})

    def __init__(self, options: BackendOptions, clock: Clock = REAL_CLOCK,
                 host: HostProcesses | None = None) -> None:
        self.options = options
        self.root = options.sysfs_root or "/"
        self.clock = clock
        self.host = host or HostProcesses()
        self.files = Files()
        self._gpus: list[_Gpu] = []
        self._info: NodeInfo | None = None
        self._shares = Rates()
        self._lock = threading.Lock()
        self._denied_pids = 0

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        cards, passed = find_cards(self.root, self.files, (fdinfo.DRIVER,))
        if not cards:
            where = drm_dir(self.root)
            why = f" ({', '.join(passed)})" if passed else ""
            raise BackendUnavailable(f"amdgpu: no card under {where} is driven by amdgpu{why}")
        ids: names.AmdgpuIds | None = None
        gpus = []
        for index, card in enumerate(cards):
            own = self.files.text(os.path.join(card.device, "product_name")) or None
            if own is None and ids is None:
                ids = names.load_ids(self.root, self.files)  # only where a card needs it
            name = names.product_name(own, card.pci_id, reads.revision(self.files, card),
                                      ids or {})
            static = reads.static(self.files, card)
            info = DeviceInfo(
                index=index, name=name, vendor=VENDOR, pci_bus_id=card.bus_id,
                memory_total_mib=static["memory_total_mib"],
                power_limit_default_w=static["power_limit_default_w"],
                power_limit_min_w=static["power_limit_min_w"],
                power_limit_max_w=static["power_limit_max_w"],
                clock_sm_max_mhz=static["clock_sm_max_mhz"],
                clock_mem_max_mhz=static["clock_mem_max_mhz"],
            )
            gpus.append(_Gpu(card, info, static))
        self._gpus = gpus
        self._info = NodeInfo(hostname(), self.name,
                              kernel_release(self.root, self.files, fdinfo.DRIVER), None,
                              tuple(g.info for g in gpus))

    def info(self) -> NodeInfo:
        if self._info is None:
            raise BackendError("amd backend not open")
        return self._info

    def notes(self) -> tuple[str, ...]:
        out = []
        if self._denied_pids:
            out.append(PROCESS_NOTE)
        denied = sorted(self.files.denied)
        if denied:
            out.append(FILES_NOTE.format(count=len(denied), path=denied[0]))
        return tuple(out)

    # ------------------------------------------------------------------ sampling
    def sample(self, devices: Sequence[int] | None = None, *,
               wants: Wants | None = EVERYTHING) -> Snapshot:
        info = self.info()
        with self._lock:
            wanted = range(len(self._gpus)) if devices is None else devices
            chosen = [self._gpus[i] for i in wanted]
            todo = list(reads.READS) if wants is None else sorted(
                {reads.READ_OF[a] for a in wants if a in reads.READ_OF})
            live = [g for g in chosen if os.path.isdir(g.card.device)]
            procs = (self._processes(live)
                     if wants is None or PROCESSES in wants else {})
            out = [self._device(g, todo, procs.get(g.info.index, ()))
                   if g in live else self._lost(g) for g in chosen]
        return Snapshot(host=info.host, time=self.clock.wall(), backend=self.name,
                        devices=tuple(out), driver_version=info.driver_version)

    def _device(self, gpu: _Gpu, todo: list[str], processes: tuple[Process, ...]) -> Device:
        shown: dict[str, Any] = {}
        for read in todo:
            shown.update(reads.READS[read].make(self.files, gpu.card))
        return Device(**self._identity(gpu), **gpu.static, **shown, processes=processes)

    @staticmethod
    def _identity(gpu: _Gpu) -> dict[str, Any]:
        info = gpu.info
        return dict(index=info.index, name=info.name, vendor=VENDOR, pci_bus_id=info.pci_bus_id)

    def _lost(self, gpu: _Gpu) -> Device:
        return Device(**self._identity(gpu), **gpu.static, status="lost",
                      status_reason=f"{gpu.card.device} is gone (unplugged, or the driver "
                                    "unbound)")

    # ------------------------------------------------------------------ processes
    def _processes(self, gpus: list[_Gpu]) -> dict[int, tuple[Process, ...]]:
        by_bus = {g.card.bus_id: g for g in gpus if g.card.bus_id is not None}
        found = drm_fdinfo.scan(os.path.join(self.root, "proc"), self.files, by_bus,
                                fdinfo.parse_client)
        self._denied_pids = found.denied
        now = self.clock.monotonic() * NS_PER_S
        out: dict[int, tuple[Process, ...]] = {}
        keys = []
        all_pids: list[int] = []
        for bus, clients in found.by_card.items():
            held = {}
            for pid, mine in clients.items():
                use = fdinfo.usage(mine)
                keys.append((bus, pid))
                held[pid] = Held(use.vram_bytes,
                                 percent(self._shares.rate((bus, pid), use.busy_ns, now)))
            out[by_bus[bus].info.index] = processes(self.host, bus, held)
            all_pids.extend(clients)
        self._shares.prune(keys)
        self.host.prune(all_pids)
        return out
