"""The dashboard on Intel cards read from captured sysfs trees: the card and its figures drawn,
its N/A fields (no memory in sysfs, no power on a first reading) shown as such."""

from __future__ import annotations

from gputop.backends.base import BackendOptions
from gputop.backends.intel.backend import IntelBackend
from tests.support.intel import B580_FAN, COMETLAKE, mount
from tests.support.tui import draw_backend


async def test_an_xe_card_is_drawn(tmp_path):
    backend = IntelBackend(BackendOptions(sysfs_root=str(mount(tmp_path, B580_FAN))))
    drawn = await draw_backend(backend, (120, 40))
    text = drawn.screens[0]
    assert "8086:E20B" in text
    assert "SIMULATED" not in text
    assert not [n for n in drawn.notices if n.severity == "error"]


async def test_an_integrated_gpu_without_hwmon_is_drawn(tmp_path):
    backend = IntelBackend(BackendOptions(sysfs_root=str(mount(tmp_path, COMETLAKE))))
    drawn = await draw_backend(backend, (80, 24))
    assert "8086:9B41" in drawn.screens[0]


async def test_an_intel_card_shows_its_gt_clock_and_no_nvidia_only_figure(tmp_path):
    from tests.support.intel import A380

    backend = IntelBackend(BackendOptions(sysfs_root=str(mount(tmp_path, A380))))
    drawn = await draw_backend(backend, (200, 60), "s")
    text = drawn.screens[0]
    assert "GT 600/2450MHz" in text  # gt_act_freq_mhz 600, gt_RP0_freq_mhz 2450
    for nvidia_only in ("NVLink", "ENC ", "Persistence-M", "Compute M.", " SM "):
        assert nvidia_only not in text, nvidia_only
    text = drawn.screens[1]
    assert "not exposed by i915/xe: SM, occupancy, tensor, DRAM" in text
    assert "GPM" not in text
