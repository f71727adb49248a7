"""The units of the kernel's sysfs and hwmon files, turned into the model's: pure functions.

hwmon prints power in µW, energy in µJ, clocks in Hz and temperatures in m°C (the kernel's
Documentation/hwmon/sysfs-interface.rst); a PCI link its speed as "16.0 GT/s PCIe".
"""

from __future__ import annotations

import re

# divided (not multiplied by 1e-6, which would print 3.103 W as 3.1029999999999998)
PER_MEGA = 1e6
PER_MILLI = 1e3

# current_link_speed / max_link_speed: "16.0 GT/s PCIe" (older kernels: "8 GT/s", "2.5 GT/s")
_LINK_SPEED = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s")
# The PCIe generation of each transfer rate (GT/s), as the PCI specifications number them.
PCIE_GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def pcie_generation(speed: str | None) -> int | None:
    """The generation of a link speed ("16.0 GT/s PCIe" → 4); None where it is not one."""
    m = _LINK_SPEED.match(speed or "")
    return PCIE_GENERATIONS.get(float(m.group(1))) if m else None


def watts(microwatts: float | None) -> float | None:
    return microwatts / PER_MEGA if microwatts is not None else None


def microwatts(watts: float) -> int:
    """A power in W as hwmon's power files take it: whole µW (270.5 W → 270500000)."""
    return round(watts * PER_MEGA)


def joules(microjoules: int | None) -> float | None:
    return microjoules / PER_MEGA if microjoules is not None else None


def mhz(hertz: int | None) -> float | None:
    return hertz / PER_MEGA if hertz is not None else None


def celsius(millidegrees: int | None) -> float | None:
    return millidegrees / PER_MILLI if millidegrees is not None else None


def link_width(lanes: int | None) -> int | None:
    """A PCIe link's width; None for 0, which an integrated GPU prints for the link it does not
    have (Comet Lake: "Unknown" speed, width 0)."""
    return lanes if lanes else None
