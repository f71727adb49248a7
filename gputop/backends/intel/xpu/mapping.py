"""What gputop asks xpu-smi for, by the tool's numeric ids, and how each answer maps onto the model.

The ids are xpu-smi v1's own, as its help prints them (tests/fixtures/intel: `dump -h` for the
metric ids, `discovery -h` for the property ids; a test reads both captures and checks each id
here against them). Each metric is found in `dump`'s output by its column header; the headers
listed are those the captures print (id 0's header changed between releases).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gputop.backends.intel.xpu import output
from gputop.backends.intel.xpu.output import Dump, ToolProcess
from gputop.core.units import KIB_PER_MIB


@dataclass(frozen=True)
class Metric:
    """One `dump -m` metric: its id, the Device attribute it fills, its headers in captures."""

    id: int
    attr: str
    headers: tuple[str, ...]


METRICS = (
    # "GPU Utilization (%)": xpu-smi 1.2 (issues 69 and 98); the user guide's release printed
    # the help text's own name. The Max 1550 and Flex 170 captures print it as N/A or blank.
    Metric(0, "utilization_gpu_pct", ("GPU Utilization (%)",
                                      "Average % utilization of all GPU Engines")),
    Metric(1, "power_draw_w", ("GPU Power (W)",)),
    Metric(2, "clock_sm_mhz", ("GPU Frequency (MHz)",)),
    Metric(3, "temperature_c", ("GPU Core Temperature (Celsius Degree)",)),
    Metric(4, "temperature_memory_c", ("GPU Memory Temperature (Celsius Degree)",)),
    # Not 5, "GPU Memory Utilization (%)": it is memory used over memory size (the A310
    # capture: 82.44 MiB used at 2.03 %), not the memory controller's busy share that the
    # model's utilization_memory_pct is.
    Metric(18, "memory_used_mib", ("GPU Memory Used (MiB)",)),
)
# The Device attributes `dump` fills (the budget reads this to know when to run it).
METRIC_ATTRS = frozenset(m.attr for m in METRICS)
# `-d -1`: every device; `-i 1 -n 1`: one row each, then exit (without -n it never ends)
DUMP_ARGS = ("dump", "-d", "-1", "-m", ",".join(str(m.id) for m in METRICS), "-i", "1",
             "-n", "1")


@dataclass(frozen=True)
class Property:
    """One `discovery --dump` property: its id and its column header (the help's name)."""

    id: int
    name: str


DEVICE_ID = Property(1, output.DISCOVERY_DEVICE_ID)  # first, so that each row starts with it
DEVICE_NAME = Property(2, "Device Name")
CORE_CLOCK = Property(6, "Core Clock Rate")  # Level Zero's coreClockRate: the highest clock
DRIVER_VERSION = Property(8, "Driver Version")
PCI_BDF = Property(11, "PCI BDF Address")
MEMORY_SIZE = Property(16, "Memory Physical Size")
PROPERTIES = (DEVICE_ID, DEVICE_NAME, CORE_CLOCK, DRIVER_VERSION, PCI_BDF, MEMORY_SIZE)
DISCOVERY_ARGS = ("discovery", "--dump", ",".join(str(p.id) for p in PROPERTIES))


@dataclass(frozen=True)
class StaticGpu:
    """What `discovery --dump` says of one device: its identity and the facts read once."""

    device: int  # xpu-smi's device id, the key of its `dump` and `ps` rows
    name: str | None
    bus_id: str | None
    driver_version: str | None
    attrs: dict[str, Any]


def static_gpu(row: Mapping[str, str]) -> StaticGpu | None:
    """One row of `discovery --dump`; None where it has no device id. A property the row lacks
    (not asked for, or printed as N/A) is None."""
    device = output.number(row.get(DEVICE_ID.name))
    if device is None or not device.is_integer() or device < 0:
        return None
    bus = output.text(row.get(PCI_BDF.name))
    return StaticGpu(
        device=int(device),
        name=output.text(row.get(DEVICE_NAME.name)),
        bus_id=bus.lower() if bus else None,
        driver_version=output.text(row.get(DRIVER_VERSION.name)),
        attrs={
            # printed with the unit suffix of the tool's table: "32768.00 MiB"
            "memory_total_mib": output.with_unit(row.get(MEMORY_SIZE.name), "MiB"),
            "clock_sm_max_mhz": output.with_unit(row.get(CORE_CLOCK.name), "MHz"),
        })


def metric_values(found: Dump, device: int) -> dict[str, Any] | None:
    """One device's readings in a `dump` answer as Device attributes (a metric whose column is
    missing, blank or N/A is None); None where the answer has no row for the device."""
    row = found.rows.get(device)
    if row is None:
        return None
    return {m.attr: next((row[h] for h in m.headers if h in row), None) for m in METRICS}


def unreported(found: Dump) -> dict[str, list[int]]:
    """Each metric asked for that the answer prints with no value (blank or N/A), by its
    header, with the devices it has no value for."""
    out: dict[str, list[int]] = {}
    for header in found.headers:
        missing = sorted(d for d, row in found.rows.items() if row.get(header) is None)
        if missing:
            out[header] = missing
    return out


def process_name(proc: ToolProcess) -> str | None:
    return os.path.basename(proc.name) if proc.name else None


def process_memory_mib(proc: ToolProcess) -> float:
    """The device memory `ps` lists: its MEM column is in kB, bytes / 1024 in the tool's
    source (cli/src/core_stub/lib_core_stub.cpp of xpumanager), so KiB."""
    return proc.memory_kib / KIB_PER_MIB


UNREPORTED_NOTE = ("xpu-smi printed no value (blank or N/A) for {header} of device(s) {devices}: "
                   "shown as N/A, not 0")


class Notes:
    """What to tell the user once of the `dump` answers read: each metric xpu-smi printed with
    no value, and for which devices (the Max 1550 and Flex 170 captures print no utilization)."""

    def __init__(self) -> None:
        self._unreported: dict[str, set[int]] = {}  # header -> devices, in the order first seen

    def add(self, found: Dump) -> None:
        for header, devices in unreported(found).items():
            self._unreported.setdefault(header, set()).update(devices)

    def lines(self) -> tuple[str, ...]:
        return tuple(UNREPORTED_NOTE.format(header=header,
                                            devices=", ".join(map(str, sorted(devices))))
                     for header, devices in self._unreported.items())
