"""The AMD backend: amdgpu cards read from sysfs and their processes from /proc/PID/fdinfo.

No library and no tool: every figure is a file the amdgpu driver prints, read under a root folder
(``--sysfs-root``, "/" by default; a container mounts the host's /sys and /proc there, and the
tests a captured tree). What is read, from where and with which permission is in
docs/backends.md. A value a card does not print is None, never 0.

Each sample reads only what the running consumers want (`reads.READS`); the static facts are read
once in open(). The lifecycle every DRM backend shares is gputop.backends.drm.backend's.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Sequence
from typing import Any

from gputop.backends.amd import fdinfo, names, reads
from gputop.backends.base import REAL_CLOCK, BackendOptions, Clock
from gputop.backends.drm import backend as drm
from gputop.backends.drm.cards import Card
from gputop.backends.drm.processes import Held
from gputop.backends.drm.rates import NS_PER_S, percent
from gputop.core.model import DeviceInfo
from gputop.host.processes import HostProcesses

VENDOR = "amd"
PROCESS_NOTE = drm.PROCESS_NOTE.format(label=fdinfo.DRIVER)


class AmdBackend(drm.DrmBackend[Card, fdinfo.Client]):
    name = "amd"
    vendor = VENDOR
    drivers = (fdinfo.DRIVER,)
    READ_OF = reads.READ_OF
    READS = tuple(reads.READS)

    def __init__(self, options: BackendOptions, clock: Clock = REAL_CLOCK,
                 host: HostProcesses | None = None) -> None:
        super().__init__(options, clock, host)
        self._ids: names.AmdgpuIds | None = None

    def describe(self, index: int, card: Card) -> tuple[Card, DeviceInfo, dict[str, Any]]:
        own = self.files.text(os.path.join(card.device, "product_name")) or None
        if own is None and self._ids is None:
            self._ids = names.load_ids(self.root, self.files)  # only where a card needs it
        name = names.product_name(own, card.pci_id, reads.revision(self.files, card),
                                  self._ids or {})
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
        return card, info, static

    def read(self, gpu: drm.Gpu[Card], todo: Sequence[str]) -> dict[str, Any]:
        shown: dict[str, Any] = {}
        for name in todo:
            shown.update(reads.READS[name].make(self.files, gpu.target))
        return shown

    @staticmethod
    def parse_client(text: str) -> fdinfo.Client | None:
        return fdinfo.parse_client(text)

    def held(self, key: tuple[str, int], clients: list[fdinfo.Client], now: float
             ) -> tuple[Held, list[Hashable]]:
        use = fdinfo.usage(clients)
        share = percent(self.shares.rate(key, use.busy_ns, now * NS_PER_S))
        return Held(use.vram_bytes, share), [key]
