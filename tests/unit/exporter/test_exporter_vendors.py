"""The exporter on an AMD card read from a captured sysfs tree: gputop's own families carry its
figures, no DCGM_FI_* name describes it (docs/prometheus.md, "Vendors"), and an NVIDIA GPU keeps
dcgm-exporter's names beside gputop's."""

from __future__ import annotations

from gputop.backends.amd.backend import AmdBackend
from gputop.backends.base import BackendOptions
from gputop.core.model import Device, Snapshot
from gputop.exporter import collect, exposition, own
from tests.support.amd import mount

RX7900XTX = "sysfs_RX7900XTX-Navi31-RDNA3_amdgpu_lact-snapshot"


def _scrape(snap: Snapshot) -> str:
    return exposition.render(collect.families(snap, own.Options(), "t")).decode()


def _amd_scrape(root) -> str:
    backend = AmdBackend(BackendOptions(sysfs_root=str(root)))
    backend.open()
    try:
        snap = backend.sample()
    finally:
        backend.close()
    return _scrape(snap)


def test_an_amd_card_is_served_under_gputop_names_only(tmp_path):
    text = _amd_scrape(mount(tmp_path, RX7900XTX))
    host = text.split('hostname="', 1)[1].split('"', 1)[0]
    gpu = f'{{gpu="0",UUID="",pci_bus_id="0000:03:00.0",device="",modelName="AMD GPU 1002:744C",' \
          f'hostname="{host}"'
    samples = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert not [line for line in samples if line.startswith(("DCGM_", "dcgm_"))]
    assert "DCGM_FI_" not in text and "nvidia0" not in text
    # values read by hand from card0/device/ of the capture
    for want in (
        f"gputop_utilization_ratio{gpu}}} 0.03",             # gpu_busy_percent 3
        f"gputop_power_draw_watts{gpu}}} 68.0",              # hwmon power1_average 68000000 uW
        f"gputop_power_limit_watts{gpu}}} 290.0",            # power1_cap 290000000
        f'gputop_temperature_celsius{gpu},sensor="gpu"}} 53.0',      # temp1 edge 53000
        f'gputop_temperature_celsius{gpu},sensor="hotspot"}} 61.0',  # temp2 junction 61000
        f'gputop_temperature_celsius{gpu},sensor="memory"}} 68.0',   # temp3 mem 68000
        f'gputop_clock_hertz{gpu},clock="sm"}} 3.1e+07',             # freq1 sclk 31000000
        f'gputop_clock_hertz{gpu},clock="memory"}} 1.249e+09',       # freq2 mclk 1249000000
        f'gputop_device_status{gpu},vendor="amd",status="ok"}} 1.0',
    ):
        assert want in samples, want
    # what the capture does not hold has no sample at all, never a 0
    for absent in ("gputop_memory_used_bytes", "gputop_memory_total_bytes",
                   "gputop_energy_joules_total", 'clock="video"', "gputop_clock_event_active"):
        assert absent not in text, absent


def test_an_nvidia_gpu_keeps_dcgm_names_beside_gputop_ones():
    dev = Device(index=0, uuid="GPU-x", name="T", pci_bus_id="00000000:01:00.0", vendor="nvidia",
                 utilization_gpu_pct=40, power_draw_w=250.0, energy_j=12.5)
    text = _scrape(Snapshot(host="n", time=1.0, backend="nvml", devices=(dev,)))
    labels = 'gpu="0",UUID="GPU-x",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="T",' \
             'hostname="n"'
    assert f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 40.0\n" in text
    assert f"gputop_utilization_ratio{{{labels}}} 0.4\n" in text
    assert f"gputop_energy_joules_total{{{labels}}} 12.5\n" in text
    assert "# TYPE gputop_energy_joules_total counter\n" in text
