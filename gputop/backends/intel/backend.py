"""The Intel backend: Arc and integrated GPUs on the i915 or xe driver, read from sysfs, and
their processes from /proc/PID/fdinfo.

No library and no tool (xpu-smi is another backend's): every figure is a file the driver prints,
read under a root folder (``--sysfs-root``, "/" by default; a container mounts the host's /sys
and /proc there, and the tests a captured tree). What is read, from where and with which
permission is in docs/backends.md. A value a card does not print is None, never 0; neither
driver prints its memory in sysfs (nvtop asks the driver by ioctl), so the card's memory is N/A.

Each sample reads only what the running consumers want (`reads.READS`); the static facts are read
once in open(). Power and utilization are rates of the kernel's counters between two samples,
kept in `_counters`. The lifecycle every DRM backend shares is gputop.backends.drm.backend's.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from gputop.backends.base import REAL_CLOCK, BackendOptions, Clock
from gputop.backends.drm import backend as drm
from gputop.backends.drm.cards import Card
from gputop.backends.drm.processes import Held
from gputop.backends.drm.rates import Rates
from gputop.backends.intel import fdinfo, reads, values
from gputop.backends.intel.gts import find_gts
from gputop.core.model import DeviceInfo
from gputop.host.processes import HostProcesses

VENDOR = "intel"
PROCESS_NOTE = drm.PROCESS_NOTE.format(label="/".join(fdinfo.DRIVERS))


class IntelBackend(drm.DrmBackend[reads.Target, fdinfo.Client]):
    name = "intel"
    vendor = VENDOR
    drivers = fdinfo.DRIVERS
    READ_OF = reads.READ_OF
    READS = tuple(reads.READS)

    def __init__(self, options: BackendOptions, clock: Clock = REAL_CLOCK,
                 host: HostProcesses | None = None) -> None:
        super().__init__(options, clock, host)
        self._counters = Rates()  # the sysfs counters: energy, idle residency

    def limit_refusal(self) -> str:
        """Say why not: i915 and xe take a limit in hwmon's power1_max, which this backend does
        not write yet (no card to test it on); the advisor shows the passive view instead."""
        return ("the intel backend does not set power limits: writing i915/xe's hwmon"
                " power1_max is not supported yet")

    def describe(self, index: int, card: Card
                 ) -> tuple[reads.Target, DeviceInfo, dict[str, Any]]:
        target = reads.Target(card, find_gts(self.files, card))
        static = reads.static(self.files, target)
        info = DeviceInfo(
            index=index, name=values.product_name(card.pci_id), vendor=VENDOR,
            pci_bus_id=card.bus_id,
            power_limit_default_w=static["power_limit_default_w"],
            clock_sm_max_mhz=static["clock_sm_max_mhz"],
        )
        return target, info, static

    def read(self, gpu: drm.Gpu[reads.Target], todo: Sequence[str]) -> dict[str, Any]:
        ctx = reads.Context(self.files, self._counters, self.clock.monotonic())
        shown: dict[str, Any] = {}
        for name in todo:
            shown.update(reads.READS[name].make(ctx, gpu.target))
        return shown

    @staticmethod
    def parse_client(text: str) -> fdinfo.Client | None:
        return fdinfo.parse_client(text)

    def held(self, key: tuple[str, int], clients: list[fdinfo.Client], now: float
             ) -> tuple[Held, list[Hashable]]:
        use = fdinfo.usage(clients)
        share = fdinfo.busy_pct(self.shares, key, use, now)
        return Held(use.local_bytes, share), list(fdinfo.rate_keys(key))
