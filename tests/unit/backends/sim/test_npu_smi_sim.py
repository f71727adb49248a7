"""The ascend-910b simulator scenario shows what the npu-smi backend would, without hardware."""

from __future__ import annotations

import pytest

from gputop.backends.base import BackendOptions, Unsupported
from gputop.backends.sim.backend import SimBackend


def test_ascend_910b_scenario() -> None:
    backend = SimBackend(BackendOptions(scenario="ascend-910b"))
    backend.open()
    snap = backend.sample()
    assert len(snap.devices) == 8
    for i, d in enumerate(snap.devices):
        assert (d.index, d.npu_id, d.chip_id) == (i, i, 0)
        assert d.vendor == "huawei" and d.name == "Ascend 910B3"
        assert d.memory_total_mib == 65536 and 0 < d.memory_used_mib <= 65536
        assert d.pci_bus_id.startswith("0000:") and len(d.pci_bus_id) == 12
        # What npu-smi cannot tell, the simulated NPU does not pretend to know.
        assert d.uuid is None and d.power_limit_w is None and d.pstate is None
        assert d.clock_event_reasons is None and d.energy_j is None and d.pcie_gen is None
        assert d.saturation.source is None
        assert all(p.sm_pct is None and p.gpu_memory_mib for p in d.processes)
    assert snap.driver_version == "25.0.rc1.1" and snap.cuda_version is None
    with pytest.raises(Unsupported):
        backend.set_power_limit(0, 300)


def test_nvidia_scenarios_unchanged() -> None:
    backend = SimBackend(BackendOptions(scenario="training"))
    backend.open()
    d = backend.sample().devices[0]
    assert d.uuid.startswith("GPU-") and d.power_limit_w == 700 and d.npu_id is None
    assert d.pci_bus_id == "00000000:18:00.0"


