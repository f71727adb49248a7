"""What a GPU vendor has no such thing as, and what it calls its main clock.

NVIDIA's driver gives figures other vendors' drivers have no counterpart for: persistence and
compute modes, NVENC/NVDEC utilization, NVLink traffic, clock-event (throttle) reasons, and the
meanings dcgm-exporter's names carry. A view shows nothing for these on an AMD or Intel GPU,
rather than an N/A that suggests a driver could report them; the exporter serves no DCGM name
for them. A device of unknown vendor (a replayed nvidia-smi log) counts as NVIDIA's, and Ascend
NPUs keep what they were shown before.
"""

from __future__ import annotations

# GPUs that are not NVIDIA's, whose drivers have none of NVIDIA's own figures.
OTHER_GPU_VENDORS = frozenset({"amd", "intel"})
# The main clock's short label: AMD's shader clock (sclk), Intel's render GT clock; SM elsewhere.
_CLOCK_LABELS = {"amd": "SCLK", "intel": "GT"}
SM_CLOCK_LABEL = "SM"


def has_nvidia_figures(vendor: str | None) -> bool:
    """Return whether a device of ``vendor`` can have NVIDIA's own figures at all."""
    return vendor not in OTHER_GPU_VENDORS


def clock_label(vendor: str | None) -> str:
    """Return the short label of the device's main clock (the model's ``clock_sm_mhz``)."""
    return _CLOCK_LABELS.get(vendor or "", SM_CLOCK_LABEL)
