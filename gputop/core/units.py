"""Declare the binary units gputop converts between, once for every layer.

NVML, /proc and Prometheus count bytes; the model, the views and nvidia-smi's CSV count MiB.
"""

from __future__ import annotations

MIB = 1024 * 1024  # bytes in a MiB
GIB = 1024 * MIB  # bytes in a GiB
MIB_PER_GIB = 1024  # MiB in a GiB: a view switches unit past this
KIB_PER_MIB = 1024  # KiB in a MiB: NVML's PCIe and NVLink counters count KiB
MB_PER_MIB = MIB / 1e6  # decimal megabytes (dcgm-exporter's MB/s) in a MiB
HZ_PER_MHZ = 1e6  # a clock in MHz (the model's unit) as Prometheus's base unit
