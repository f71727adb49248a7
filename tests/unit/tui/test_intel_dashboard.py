"""The dashboard on Intel cards read from captured sysfs trees: the card and its figures drawn,
its N/A fields (no memory in sysfs, no power on a first reading) shown as such."""

from __future__ import annotations

from gputop.backends.base import BackendOptions
from gputop.backends.intel.backend import IntelBackend
from gputop.tui.app import GputopApp
from tests.support.intel import B580_FAN, COMETLAKE, mount
from tests.support.tui import notices, settle, visible_lines


async def test_an_xe_card_is_drawn(tmp_path):
    backend = IntelBackend(BackendOptions(sysfs_root=str(mount(tmp_path, B580_FAN))))
    backend.open()
    app = GputopApp(backend, autostart=False)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            app.sampler.tick()
            await settle(pilot)
            text = "\n".join(visible_lines(app))
            assert "8086:E20B" in text
            assert "SIMULATED" not in text
            assert not [n for n in notices(app) if n.severity == "error"]
            await pilot.press("q")
    finally:
        backend.close()


async def test_an_integrated_gpu_without_hwmon_is_drawn(tmp_path):
    backend = IntelBackend(BackendOptions(sysfs_root=str(mount(tmp_path, COMETLAKE))))
    backend.open()
    app = GputopApp(backend, autostart=False)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            app.sampler.tick()
            await settle(pilot)
            assert "8086:9B41" in "\n".join(visible_lines(app))
            await pilot.press("q")
    finally:
        backend.close()
