"""What the dashboard reads from each tick (gputop.core.budget), importable without Textual."""

from __future__ import annotations

from gputop.core import budget

# What the dashboard reads from each tick (gputop.core.budget): its cards, history plot, process table
# and hints. Nothing else is asked of the device; other screens add what they show while open.
DASHBOARD = {
    **budget.wants("utilization_gpu_pct", "memory_used_mib", "power_draw_w", "power_limit_w",
                   "clock_sm_mhz", "clock_event_reasons", "processes"),
    # Slow by nature (thermal mass, fan ramps): a reading a few seconds old says the same.
    **budget.wants("temperature_c", "fan_pct", "pstate", every=5.0),
    # GPM, for the underfilled / memory-bound hints over a 60 s window; the saturation panel
    # asks for it on every tick while it is open.
    **budget.wants("saturation", every=5.0),
    # Under MIG the cards nest each instance's memory and the table its GI/CI (no cost elsewhere:
    # a GPU with MIG off is never asked).
    **budget.wants("mig_instances"),
    # The health hints and badges (#27): counters that change rarely, read on a slow schedule so
    # the call budget per tick does not grow.
    **budget.wants("ecc_errors_uncorrected_volatile", "remapped_rows_pending",
                   "remapped_rows_failed", "retired_pages_pending", "pcie_width",
                   "pcie_width_max", "pcie_gen", "pcie_gen_max", "xid_last", every=30.0),
    # Each Xid as it comes (#29), tied to the processes on its GPU at that moment: drained on
    # every tick, as a process an Xid ends is gone a tick later. On NVML one call per tick for
    # the whole node (nvmlEventSetWait_v2 with timeout 0), not one per GPU.
    **budget.wants("xid_events"),
}

# The modes the wide cards and the saturation panel name (gputop/tui/text/facts.py), asked only
# while one of them is on screen: modes an administrator changes, read on the health reads' slow
# schedule. The Bus-Id is an identity fact that comes with every device, and the MIG mode comes
# with the MIG read the process table and GPM already make, so neither costs a call of its own.
MODES = budget.wants("persistence_mode", "compute_mode", every=30.0)

# The wide cards' rates line (gputop/tui/text/rates.py), added only while it is on screen: video
# engines and PCIe and NVLink traffic (GPM's, else the driver's link counters), fresh every tick.
WIDE_CARDS = {**budget.wants("utilization_encoder_pct", "utilization_decoder_pct", "saturation",
                             budget.LINK_RATES), **MODES}

# The saturation panel (`s`), while it is open: GPM on every tick, and the link rates it shows
# for a GPU without GPM too.
SATURATION_PANEL = {**budget.wants("saturation", budget.LINK_RATES), **MODES}
