"""Where each `--query-gpu` field stands in `nvidia-smi -q` (text) and `-q -x` (XML).

One table, read both ways: gputop writes `-q` from the model through it, and reads a real `-q`
capture back into the model through it. A value is the query field's own cell (the same getter,
number format and unit as `--query-gpu`, gputop.formats.query_fields), restyled where `-q` writes
it otherwise: temperatures end in " C", XML drops the "0x" of hex numbers, link widths end in
"x", and an unavailable value is N/A, not [N/A].

The paths are those of the real captures in tests/fixtures/nvidia-smi/ (drivers 418 to 590); where
a driver generation renamed a label or a tag, every spelling is listed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gputop.formats.query_fields import Field, format_value, lookup, parse_value

Path = tuple[str, ...]
NA = "N/A"


def _p(*paths: str) -> tuple[Path, ...]:
    return tuple(tuple(p.split("/")) for p in paths)


@dataclass(frozen=True, slots=True)
class Place:
    """One query field's place in `-q`: its spellings in text and in XML, and its style."""

    field: Field
    text: tuple[Path, ...]
    xml: tuple[Path, ...]
    style: str = ""  # "C": temperature; "hex": no 0x in XML; "x": link width


def _place(name: str, text: tuple[Path, ...], xml: tuple[Path, ...], style: str = "") -> Place:
    return Place(lookup(name), text, xml, style)


def _power(name: str, gpu_labels: tuple[str, ...], old_labels: tuple[str, ...],
           gpu_tags: tuple[str, ...], old_tags: tuple[str, ...]) -> Place:
    """A power reading: under "GPU Power Readings" (driver 535 on), else "Power Readings"."""
    return Place(lookup(name),
                 tuple(("GPU Power Readings", x) for x in gpu_labels)
                 + tuple(("Power Readings", x) for x in old_labels),
                 tuple(("gpu_power_readings", x) for x in gpu_tags)
                 + tuple(("power_readings", x) for x in old_tags))


_R = "Clocks Event Reasons", "Clocks Throttle Reasons"
_RX = "clocks_event_reasons", "clocks_throttle_reasons"


def _reasons() -> Iterator[Place]:
    # (query field, -q label under the section, the XML tag's reason name)
    for name, label, tag in (
        ("gpu_idle", "Idle", "gpu_idle"),
        ("applications_clocks_setting", "Applications Clocks Setting",
         "applications_clocks_setting"),
        ("sw_power_cap", "SW Power Cap", "sw_power_cap"),
        ("hw_slowdown", "HW Slowdown", "hw_slowdown"),
        ("hw_thermal_slowdown", "HW Slowdown/HW Thermal Slowdown", "hw_thermal_slowdown"),
        ("hw_power_brake_slowdown", "HW Slowdown/HW Power Brake Slowdown",
         "hw_power_brake_slowdown"),
        ("sync_boost", "Sync Boost", "sync_boost"),
        ("sw_thermal_slowdown", "SW Thermal Slowdown", "sw_thermal_slowdown"),
    ):
        yield Place(lookup(f"clocks_event_reasons.{name}"),
                    tuple((s, *label.split("/")) for s in _R),
                    ((_RX[0], f"clocks_event_reason_{tag}"),
                     (_RX[1], f"clocks_throttle_reason_{tag}")))


PLACES: tuple[Place, ...] = (
    _place("name", _p("Product Name"), _p("product_name")),
    _place("display_active", _p("Display Active"), _p("display_active")),
    _place("persistence_mode", _p("Persistence Mode"), _p("persistence_mode")),
    _place("mig.mode.current", _p("MIG Mode/Current"), _p("mig_mode/current_mig")),
    _place("mig.mode.pending", _p("MIG Mode/Pending"), _p("mig_mode/pending_mig")),
    _place("serial", _p("Serial Number"), _p("serial")),
    _place("uuid", _p("GPU UUID"), _p("uuid")),
    _place("vbios_version", _p("VBIOS Version"), _p("vbios_version")),
    _place("pci.bus", _p("PCI/Bus"), _p("pci/pci_bus"), "hex"),
    _place("pci.device", _p("PCI/Device"), _p("pci/pci_device"), "hex"),
    _place("pci.domain", _p("PCI/Domain"), _p("pci/pci_domain"), "hex"),
    _place("pci.device_id", _p("PCI/Device Id"), _p("pci/pci_device_id"), "hex"),
    _place("pci.bus_id", _p("PCI/Bus Id"), _p("pci/pci_bus_id")),
    _place("pci.sub_device_id", _p("PCI/Sub System Id"), _p("pci/pci_sub_system_id"), "hex"),
    _place("pcie.link.gen.max", _p("PCI/GPU Link Info/PCIe Generation/Max"),
           _p("pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
    _place("pcie.link.gen.current", _p("PCI/GPU Link Info/PCIe Generation/Current"),
           _p("pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
    _place("pcie.link.width.max", _p("PCI/GPU Link Info/Link Width/Max"),
           _p("pci/pci_gpu_link_info/link_widths/max_link_width"), "x"),
    _place("pcie.link.width.current", _p("PCI/GPU Link Info/Link Width/Current"),
           _p("pci/pci_gpu_link_info/link_widths/current_link_width"), "x"),
    _place("fan.speed", _p("Fan Speed"), _p("fan_speed")),
    # (not <power_state>: driver 590 prints "Requested functionality has been deprecated" there)
    _place("pstate", _p("Performance State"), _p("performance_state")),
    *_reasons(),
    _place("memory.total", _p("FB Memory Usage/Total"), _p("fb_memory_usage/total")),
    _place("memory.reserved", _p("FB Memory Usage/Reserved"), _p("fb_memory_usage/reserved")),
    _place("memory.used", _p("FB Memory Usage/Used"), _p("fb_memory_usage/used")),
    _place("memory.free", _p("FB Memory Usage/Free"), _p("fb_memory_usage/free")),
    _place("compute_mode", _p("Compute Mode"), _p("compute_mode")),
    _place("utilization.gpu", _p("Utilization/GPU", "Utilization/Gpu"), _p("utilization/gpu_util")),
    _place("utilization.memory", _p("Utilization/Memory"), _p("utilization/memory_util")),
    _place("utilization.encoder", _p("Utilization/Encoder"), _p("utilization/encoder_util")),
    _place("utilization.decoder", _p("Utilization/Decoder"), _p("utilization/decoder_util")),
    _place("ecc.mode.current", _p("ECC Mode/Current"), _p("ecc_mode/current_ecc")),
    _place("ecc.mode.pending", _p("ECC Mode/Pending"), _p("ecc_mode/pending_ecc")),
    _place("retired_pages.single_bit_ecc.count", _p("Retired Pages/Single Bit ECC"),
           _p("retired_pages/multiple_single_bit_retirement/retired_count")),
    _place("retired_pages.double_bit.count", _p("Retired Pages/Double Bit ECC"),
           _p("retired_pages/double_bit_retirement/retired_count")),
    _place("retired_pages.pending", _p("Retired Pages/Pending Page Blacklist"),
           _p("retired_pages/pending_blacklist")),
    _place("remapped_rows.correctable", _p("Remapped Rows/Correctable Error"),
           _p("remapped_rows/remapped_row_corr")),
    _place("remapped_rows.uncorrectable", _p("Remapped Rows/Uncorrectable Error"),
           _p("remapped_rows/remapped_row_unc")),
    _place("remapped_rows.pending", _p("Remapped Rows/Pending"), _p("remapped_rows/remapped_row_pending")),
    _place("remapped_rows.failure", _p("Remapped Rows/Remapping Failure Occurred"),
           _p("remapped_rows/remapped_row_failure")),
    _place("temperature.gpu", _p("Temperature/GPU Current Temp"), _p("temperature/gpu_temp"), "C"),
    _place("temperature.memory", _p("Temperature/Memory Current Temp"),
           _p("temperature/memory_temp"), "C"),
    _power("power.draw", ("Average Power Draw", "Power Draw"), ("Power Draw",),
           ("average_power_draw", "power_draw"), ("power_draw",)),
    _power("power.limit", ("Requested Power Limit",), ("Power Limit",),
           ("requested_power_limit",), ("power_limit",)),
    _power("enforced.power.limit", ("Current Power Limit",), ("Enforced Power Limit",),
           ("current_power_limit",), ("enforced_power_limit",)),
    *(_power(f"power.{q}_limit", (f"{label} Power Limit",), (f"{label} Power Limit",),
             (f"{q}_power_limit",), (f"{q}_power_limit",))
      for q, label in (("default", "Default"), ("min", "Min"), ("max", "Max"))),
    _place("clocks.current.graphics", _p("Clocks/Graphics"), _p("clocks/graphics_clock")),
    _place("clocks.current.sm", _p("Clocks/SM"), _p("clocks/sm_clock")),
    _place("clocks.current.memory", _p("Clocks/Memory"), _p("clocks/mem_clock")),
    _place("clocks.current.video", _p("Clocks/Video"), _p("clocks/video_clock")),
    _place("clocks.max.graphics", _p("Max Clocks/Graphics"), _p("max_clocks/graphics_clock")),
    _place("clocks.max.sm", _p("Max Clocks/SM"), _p("max_clocks/sm_clock")),
    _place("clocks.max.memory", _p("Max Clocks/Memory"), _p("max_clocks/mem_clock")),
)
BY_PATH: dict[tuple[bool, Path], Place] = {
    (xml, path): place for place in PLACES
    for xml, paths in ((False, place.text), (True, place.xml)) for path in paths
}


def write(place: Place, value: object, xml: bool) -> str:
    """``value`` (the query field's model value; None: unavailable) as `-q` writes it."""
    if value is None:
        return NA
    text = format_value(place.field, value)
    if place.style == "C":
        return f"{text} C"
    if place.style == "x":
        return f"{text}x"
    if place.style == "hex" and xml and text.startswith("0x"):
        return text[2:]
    return text


def read(place: Place, raw: str) -> object:
    """A `-q` value back into the query field's model value (None: N/A or not understood)."""
    text = raw.strip()
    if text in (NA, "Unknown Error", "Not Supported", "[N/A]"):
        return None
    if place.style == "C" and text.endswith(" C"):
        text = text[:-2]
    elif place.style == "x" and text.endswith("x"):
        text = text[:-1]
    elif place.style == "hex" and not text.startswith("0x"):
        text = "0x" + text
    return parse_value(place.field, text)


__all__ = ["BY_PATH", "NA", "PLACES", "Place", "read", "write"]
