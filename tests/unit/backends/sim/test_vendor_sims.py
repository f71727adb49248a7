"""The mi300x and max-1550 simulator scenarios show what the amd and intel backends would, and
nothing more (#32 item 6): every reading a simulated device gives is one the real backend gives
on some captured card, so the dashboard, hints and saturation panel behave as on the part."""

from __future__ import annotations

from dataclasses import fields

import pytest

from gputop.backends.amd import reads as amd_reads
from gputop.backends.amd.backend import AmdBackend
from gputop.backends.base import CAP_POWER_LIMIT, CAP_SATURATION, BackendOptions, Unsupported
from gputop.backends.drm.cards import find_cards
from gputop.backends.intel import reads as intel_reads
from gputop.backends.intel.backend import IntelBackend
from gputop.backends.intel.values import product_name
from gputop.backends.sim.backend import SimBackend
from gputop.core.model import Device
from tests.support import amd, intel

# Not readings: the device's place and state, its lists, and the simulator's own truth.
NOT_READINGS = {"index", "status", "processes", "mig_instances", "xid_events", "saturation", "sim"}
READINGS = [f.name for f in fields(Device) if f.name not in NOT_READINGS]


def sim(scenario: str) -> SimBackend:
    backend = SimBackend(BackendOptions(scenario=scenario, sim_speed=1000))
    backend.open()
    return backend


def filled(devices: list[Device]) -> set[str]:
    return {name for d in devices for name in READINGS if getattr(d, name) is not None}


def real_fills(tmp_path, backend_class, module, reads, tree: str) -> set[str]:
    """Every reading the real backend builds a device from: its identity, the static facts it
    reads once (the keys of its own ``describe``, on a captured card) and what each sample may
    read (its ``READ_OF`` table)."""
    root = str(module.mount(tmp_path, tree))
    backend = backend_class(BackendOptions(sysfs_root=root))
    cards, _ = find_cards(root, backend.files, backend.drivers)
    _, _, static = backend.describe(0, cards[0])
    return {"name", "vendor", "pci_bus_id"} | set(static) | set(reads.READ_OF)


def test_mi300x_loads_and_samples_as_amdgpus_sysfs_shows_it():
    backend = sim("mi300x")
    snap = backend.sample()
    assert len(snap.devices) == 8 and snap.driver_version == "6.16.13"
    for i, d in enumerate(snap.devices):
        assert (d.index, d.vendor, d.name) == (i, "amd", "AMD Instinct MI300X OAM")
        assert d.memory_total_mib == 196592 and 0 < d.memory_used_mib <= 196592
        assert d.power_limit_max_w == 750 and d.clock_sm_max_mhz == 2100
        assert (d.pcie_gen_max, d.pcie_width_max) == (5, 16)
        assert d.temperature_hotspot_c == d.temperature_c  # MI300: no edge sensor
        assert d.pci_bus_id == f"0000:{0x18 + 0x10 * i:02x}:00.0"
        # what amdgpu's sysfs does not give, the simulated part does not pretend to know
        assert d.uuid is None and d.energy_j is None and d.pstate is None
        assert d.clock_event_reasons is None and d.ecc_mode is None and d.mig_mode is None
        assert d.saturation.source is None and d.saturation.sm_active_pct is None
        assert d.processes and all(p.type is None for p in d.processes)
    assert snap.cuda_version is None
    assert CAP_SATURATION not in backend.capabilities
    assert CAP_POWER_LIMIT not in backend.capabilities
    with pytest.raises(Unsupported, match="amd backend cannot set power limits"):
        backend.set_power_limit(0, 500)


def test_max_1550_loads_and_samples_as_i915s_sysfs_shows_it():
    backend = sim("max-1550")
    snap = backend.sample()
    assert len(snap.devices) == 6 and snap.driver_version is None
    for d in snap.devices:
        assert (d.vendor, d.name) == ("intel", product_name((0x8086, 0x0BD5)))
        assert d.power_draw_w > 0 and d.energy_j > 0 and d.power_limit_w == 600
        assert d.clock_sm_max_mhz == 1600 and (d.pcie_gen, d.pcie_width) == (5, 16)
        # i915 prints no memory figure; the Max 1550's utilization is N/A
        assert d.memory_total_mib is None and d.memory_used_mib is None
        assert d.utilization_gpu_pct is None and d.utilization_memory_pct is None
        assert d.uuid is None and d.saturation.source is None and d.mig_mode is None
        assert d.processes and all(p.gpu_memory_mib for p in d.processes)
    info = backend.info().devices[0]
    assert info.memory_total_mib is None and info.power_limit_max_w is None
    with pytest.raises(Unsupported):
        backend.set_power_limit(0, 500)


def test_a_simulated_mi300x_reads_nothing_amdgpus_sysfs_does_not(tmp_path):
    real = real_fills(tmp_path, AmdBackend, amd, amd_reads, amd.AMDGPU_TREES[0])
    assert filled(list(sim("mi300x").sample().devices)) - real == set()


def test_a_simulated_max_1550_reads_nothing_i915s_sysfs_does_not(tmp_path):
    real = real_fills(tmp_path, IntelBackend, intel, intel_reads, intel.A380)
    # i915 has one GT: no media clock (xe's), no memory temperature label
    real -= {"clock_video_mhz", "temperature_memory_c"}
    assert filled(list(sim("max-1550").sample().devices)) - real == set()
