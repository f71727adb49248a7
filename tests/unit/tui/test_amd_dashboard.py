"""The dashboard on an AMD card read from a captured sysfs tree: its card and figures drawn,
its N/A fields shown as such, nothing that assumes an NVIDIA GPU in the way."""

from __future__ import annotations

from gputop.backends.amd.backend import AmdBackend
from gputop.backends.base import BackendOptions
from tests.support.amd import PHOENIX_TREE, install_ids, mount
from tests.support.tui import draw_backend

RX6900XT = "sysfs_RX6900XT-Navi21-RDNA2_amdgpu_lact-snapshot_gpu_metrics"


async def test_an_amd_card_is_drawn_with_its_figures(tmp_path):
    root = mount(tmp_path, RX6900XT)
    install_ids(root)
    drawn = await draw_backend(AmdBackend(BackendOptions(sysfs_root=str(root))), (120, 40))
    text = drawn.screens[0]
    assert "RX 6900 XT" in text
    assert "SIMULATED" not in text
    assert not [n for n in drawn.notices if n.severity == "error"]


async def test_an_apu_without_fan_or_power_cap_is_drawn(tmp_path):
    backend = AmdBackend(BackendOptions(sysfs_root=str(mount(tmp_path, PHOENIX_TREE))))
    drawn = await draw_backend(backend, (80, 24))
    assert "1002:15BF" in drawn.screens[0]


RX7900XTX = "sysfs_RX7900XTX-Navi31-RDNA3_amdgpu_lact-snapshot"


async def _screen(backend, size, *keys) -> str:
    return (await draw_backend(backend, size, *keys)).screens[-1]


async def test_an_amd_card_shows_no_nvidia_only_figure_at_120_and_200_columns(tmp_path):
    """NVENC/NVDEC, NVLink, persistence and compute modes are NVIDIA's: no line of N/A for
    them on an AMD card, and its shader clock is labelled as AMD names it."""
    root = mount(tmp_path, RX7900XTX)
    for size in ((120, 40), (200, 60)):
        text = await _screen(AmdBackend(BackendOptions(sysfs_root=str(root))), size)
        assert "SCLK 31/2219MHz" in text, size  # freq1 sclk 31 MHz, pp_dpm_sclk top 2219
        assert " SM " not in text
        for nvidia_only in ("NVLink", "ENC ", "DEC ", "Persistence-M", "Compute M."):
            assert nvidia_only not in text, (size, nvidia_only)
    assert "PCIe TX" in text  # the wide card keeps the link every GPU has


async def test_the_saturation_screen_says_what_amd_does_not_expose(tmp_path):
    text = await _screen(AmdBackend(BackendOptions(sysfs_root=str(mount(tmp_path, RX7900XTX)))),
                         (120, 40), "s")
    assert "AMD GPUs report busy % (amdgpu's gpu_busy_percent" in text
    assert "not exposed by amdgpu: SM, occupancy, tensor, DRAM" in text
    assert "clock slowdowns: not reported by the driver" in text
    assert "GPM" not in text and "Persistence-M" not in text
