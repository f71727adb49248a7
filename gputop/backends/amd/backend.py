"""The AMD backend: amdgpu cards read from sysfs and their processes from /proc/PID/fdinfo.

No library and no tool: every figure is a file the amdgpu driver prints, read under a root folder
(``--sysfs-root``, "/" by default; a container mounts the host's /sys and /proc there, and the
tests a captured tree). What is read, from where and with which permission is in
docs/backends.md. A value a card does not print is None, never 0.

Each sample reads only what the running consumers want (`reads.READS`); the static facts are read
once in open(). The lifecycle every DRM backend shares is gputop.backends.drm.backend's.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from gputop.backends.amd import fdinfo, names, reads
from gputop.backends.base import (
    CAP_POWER_LIMIT,
    REAL_CLOCK,
    BackendError,
    BackendOptions,
    Clock,
    NoPermission,
    Unsupported,
)
from gputop.backends.drm import backend as drm
from gputop.backends.drm import hwmon
from gputop.backends.drm.cards import Card
from gputop.backends.drm.processes import Held
from gputop.backends.drm.rates import NS_PER_S, percent
from gputop.backends.drm.units import microwatts
from gputop.core.model import DeviceInfo
from gputop.host.processes import HostProcesses

VENDOR = "amd"
PROCESS_NOTE = drm.PROCESS_NOTE.format(label=fdinfo.DRIVER)
CAP_FILE = "power1_cap"  # the power cap amdgpu enforces, in µW, root's to write (mode 0644)
NEEDS = "run gputop as root (sudo): amdgpu's hwmon power1_cap is writable by root only"
# What the AMD tool backends (amd-smi, rocm-smi), which set no cap, say sets it instead
SYSFS_SETS_CAP = (f"`--backend amd` sets the cap through hwmon {CAP_FILE}, as root, where gputop"
                  " sees the host's /sys/class/drm")


def cap_refusal(where: str, device: int) -> BackendError | None:
    """Why ``where`` (a card's power1_cap) cannot be written, where that shows before trying:
    a file with no write bit at all is one the driver keeps read-only (root included), and
    a file this process may not write needs root."""
    try:
        mode = os.stat(where).st_mode
    except OSError as exc:
        return BackendError(f"GPU {device}: cannot read {where}: {exc.strerror or exc}")
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return Unsupported(f"GPU {device}'s power cap cannot be changed: amdgpu keeps {where} "
                           "read-only on this card")
    if not os.access(where, os.W_OK):
        return NoPermission(f"setting the power limit of GPU {device} needs root: {where} is "
                            "writable by its owner only", needs=NEEDS)
    return None


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

    def open(self) -> None:
        super().open()
        if any(os.path.isfile(hwmon.path(g.card, CAP_FILE) or "") for g in self._gpus):
            # settable in principle: the file's mode and this process's privilege say at the write
            self.capabilities = self.capabilities | {CAP_POWER_LIMIT}

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

    # ------------------------------------------------------------------ power cap
    def set_power_limit(self, device: int, watts: float) -> None:
        """Write ``watts`` (as µW) to the card's hwmon ``power1_cap``, within its
        ``power1_cap_min``..``power1_cap_max``. A cap the driver keeps read-only is Unsupported,
        a file this process may not write NoPermission (with what it needs); the next sample
        reads the new cap back."""
        self.info()
        if not 0 <= device < len(self._gpus):
            raise BackendError(f"no GPU {device}")
        gpu = self._gpus[device]
        where = hwmon.path(gpu.card, CAP_FILE)
        if where is None or not os.path.isfile(where):
            raise Unsupported(f"GPU {device} has no hwmon {CAP_FILE}: amdgpu gives this card no "
                              "power cap to set")
        lo, hi = gpu.info.power_limit_min_w, gpu.info.power_limit_max_w
        if lo is not None and hi is not None and not lo <= watts <= hi:
            raise BackendError(
                f"power limit {watts:g} W for GPU {device} is outside its range {lo:g}-{hi:g} W")
        refusal = cap_refusal(where, device)
        if refusal is not None:
            raise refusal
        try:
            hwmon.write_integer(where, microwatts(watts))
        except PermissionError:
            raise NoPermission(f"setting the power limit of GPU {device} needs root: {where} is "
                               "writable by its owner only", needs=NEEDS) from None
        except OSError as exc:
            if exc.errno == errno.EROFS:
                raise Unsupported(f"GPU {device}'s power cap cannot be changed here: {where} is "
                                  "on a read-only mount (a container's /sys?)") from None
            raise BackendError(f"amdgpu refused a power limit of {watts:g} W for GPU {device}: "
                               f"{exc.strerror or exc}") from None

    def limit_refusal(self) -> str:
        return f"amdgpu gives these cards no hwmon {CAP_FILE} to set"

    def limit_commands(self, limits: Mapping[int, float]) -> list[str]:
        """Return, per card, the command that writes its limit to its power1_cap as root."""
        out = []
        for i, w in sorted(limits.items()):
            where = hwmon.path(self._gpus[i].card, CAP_FILE) if 0 <= i < len(self._gpus) else None
            if where is not None:
                out.append(f"echo {microwatts(w)} | sudo tee {where}")
        return out

    @staticmethod
    def parse_client(text: str) -> fdinfo.Client | None:
        return fdinfo.parse_client(text)

    def held(self, key: tuple[str, int], clients: list[fdinfo.Client], now: float
             ) -> tuple[Held, list[Hashable]]:
        use = fdinfo.usage(clients)
        share = percent(self.shares.rate(key, use.busy_ns, now * NS_PER_S))
        return Held(use.vram_bytes, share), [key]
