"""PCIe and NVLink traffic from NVML's own counters, for a GPU without GPM.

GPM (gpm.py, Hopper and newer) measures the four link rates of ``Saturation`` itself; a GPU
without it (Volta, Ampere, Ada, or GPM refused) still answers two older sources, read here only
when a consumer wants the rates (``budget.LINK_RATES``):

- PCIe: ``nvmlDeviceGetPcieThroughput`` with ``NVML_PCIE_UTIL_TX_BYTES`` / ``RX_BYTES``, the
  driver's byte counter over a 20 ms window, in KB/s (KiB/s, as nvitop and nvtop read it): one
  call per direction, a rate already.
- NVLink: the field values ``NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX`` / ``_RX``, cumulative KiB
  per link (scope id = link), all links in one ``nvmlDeviceGetFieldValues`` call; a rate is the
  delta of two readings over their timestamps, so the first reading is N/A, and so is a tick
  whose counter went backwards (a driver reload) or lacks a timestamp. The link count
  (``NVML_FI_DEV_NVLINK_LINK_COUNT``) is asked once; a GPU without NVLink is not asked again.

A call the driver does not answer (NOT_SUPPORTED, FUNCTION_NOT_FOUND, an older binding without
the wrapper) is N/A and not asked again (``Reader.call``/``Reader.field``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from gputop.backends.nvml.reads import Reader
from gputop.core.units import KIB_PER_MIB

# (value, timestamp in µs) of one cumulative counter reading
Reading = tuple[int, int]

# Saturation field -> pynvml's PCIe counter constant (nvmlDeviceGetPcieThroughput's argument)
PCIE = (("pcie_tx_mibps", "NVML_PCIE_UTIL_TX_BYTES"), ("pcie_rx_mibps", "NVML_PCIE_UTIL_RX_BYTES"))
# Saturation field -> pynvml's NVLink data counter field id, one entry per link
NVLINK = (("nvlink_tx_mibps", "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX"),
          ("nvlink_rx_mibps", "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX"))
NVLINK_KEY = "nvlink_rates"  # the skip key of the NVLink reads (Reader.field)


class LinkRates(NamedTuple):
    """The four link rates in MiB/s, named as ``Saturation``'s fields (None: N/A)."""

    pcie_tx_mibps: float | None = None
    pcie_rx_mibps: float | None = None
    nvlink_tx_mibps: float | None = None
    nvlink_rx_mibps: float | None = None


def counter_rate(prev: Reading | None, cur: Reading | None) -> float | None:
    """Units per second of a cumulative counter between two readings; None (N/A) without a
    previous reading, with a missing (0) or non-increasing timestamp, or where the counter went
    backwards (a reset: a difference across it would be meaningless)."""
    if prev is None or cur is None:
        return None
    (v0, t0), (v1, t1) = prev, cur
    if t0 <= 0 or t1 <= t0 or v1 < v0:
        return None
    return (v1 - v0) * 1e6 / (t1 - t0)


def total_rate(pairs: Iterable[tuple[Reading | None, Reading | None]]) -> float | None:
    """The sum of each link's counter rate; None where there is no link, or where any link's
    rate is N/A this tick (a sum missing a link would read as less traffic than there was)."""
    total = 0.0
    seen = False
    for prev, cur in pairs:
        rate = counter_rate(prev, cur)
        if rate is None:
            return None
        total += rate
        seen = True
    return total if seen else None


class LinkCounters:
    """One GPU's link counters: the NVLink link count (asked once) and the last readings."""

    def __init__(self) -> None:
        self.nvlinks: int | None = None  # None: not asked yet; 0: no NVLink
        self.last: dict[tuple[int, int], Reading] = {}  # (field id, link) -> its last reading

    def read(self, r: Reader, gpu: Any) -> LinkRates:
        """Read the four link rates now."""
        nv = r.nv
        out: dict[str, float | None] = {}
        for attr, counter in PCIE:
            # pynvml's constant, by name
            kib_s = r.call(gpu, attr, "nvmlDeviceGetPcieThroughput", getattr(nv, counter))
            out[attr] = kib_s / KIB_PER_MIB if kib_s is not None else None
        out.update(self._nvlink(r, gpu))
        return LinkRates(**out)

    def _links(self, r: Reader, gpu: Any) -> int:
        if self.nvlinks is None:
            nv = r.nv
            values = r.field(gpu, NVLINK_KEY, nv.nvmlDeviceGetFieldValues, gpu.handle,
                             [nv.NVML_FI_DEV_NVLINK_LINK_COUNT])
            ok = values is not None and values[0].nvmlReturn == nv.NVML_SUCCESS
            self.nvlinks = int(values[0].value.uiVal) if ok else 0
        return self.nvlinks

    def _nvlink(self, r: Reader, gpu: Any) -> dict[str, float | None]:
        out: dict[str, float | None] = dict.fromkeys(attr for attr, _ in NVLINK)
        links = self._links(r, gpu)
        if not links:
            return out
        nv = r.nv
        ids = [(getattr(nv, name), link) for _, name in NVLINK for link in range(links)]
        values = r.field(gpu, NVLINK_KEY, nv.nvmlDeviceGetFieldValues, gpu.handle, ids)
        if values is None:
            self.last.clear()
            return out
        now: dict[tuple[int, int], Reading] = {}
        for key, v in zip(ids, values):
            if v.nvmlReturn == nv.NVML_SUCCESS:
                now[key] = (int(v.value.ullVal), int(v.timestamp))
        for attr, name in NVLINK:
            fid = getattr(nv, name)
            # the links that answer (a link that never does, say an inactive one, carries
            # nothing); one that answered only one of the two ticks makes the total unknown
            keys = [k for k in ids if k[0] == fid and (k in now or k in self.last)]
            kib_s = total_rate((self.last.get(k), now.get(k)) for k in keys)
            out[attr] = kib_s / KIB_PER_MIB if kib_s is not None else None
        self.last = now
        return out
