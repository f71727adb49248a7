"""The dashboard on an AMD card read from a captured sysfs tree: its card and figures drawn,
its N/A fields shown as such, nothing that assumes an NVIDIA GPU in the way."""

from __future__ import annotations

from gputop.backends.amd.backend import AmdBackend
from gputop.backends.base import BackendOptions
from gputop.tui.app import GputopApp
from tests.support.amd import PHOENIX_TREE, install_ids, mount
from tests.support.tui import notices, settle, visible_lines

RX6900XT = "sysfs_RX6900XT-Navi21-RDNA2_amdgpu_lact-snapshot_gpu_metrics"


async def test_an_amd_card_is_drawn_with_its_figures(tmp_path):
    root = mount(tmp_path, RX6900XT)
    install_ids(root)
    backend = AmdBackend(BackendOptions(sysfs_root=str(root)))
    backend.open()
    app = GputopApp(backend, autostart=False)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            app.sampler.tick()
            await settle(pilot)
            text = "\n".join(visible_lines(app))
            assert "RX 6900 XT" in text
            assert "SIMULATED" not in text
            assert not [n for n in notices(app) if n.severity == "error"]
            await pilot.press("q")
    finally:
        backend.close()


async def test_an_apu_without_fan_or_power_cap_is_drawn(tmp_path):
    backend = AmdBackend(BackendOptions(sysfs_root=str(mount(tmp_path, PHOENIX_TREE))))
    backend.open()
    app = GputopApp(backend, autostart=False)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            app.sampler.tick()
            await settle(pilot)
            assert "1002:15BF" in "\n".join(visible_lines(app))
            await pilot.press("q")
    finally:
        backend.close()
