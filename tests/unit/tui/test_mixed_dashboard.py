"""The dashboard on a node with GPUs of two vendors (#32 item 4): NVML's fake and a captured
amdgpu card read as one node, drawn with the backends' joint name and every GPU."""

from __future__ import annotations

from gputop.backends import open_backend
from gputop.backends.base import BackendOptions
from gputop.tui.app import GputopApp
from tests.support.amd import mount
from tests.support.fake_pynvml import FakeNvml, install, node
from tests.support.tui import settle, visible_lines

RX6900XT = "sysfs_RX6900XT-Navi21-RDNA2_amdgpu_lact-snapshot_gpu_metrics"


async def test_the_dashboard_draws_both_vendors(tmp_path, monkeypatch):
    install(monkeypatch, FakeNvml(node(2)))
    monkeypatch.setenv("PATH", "/nonexistent")
    backend = open_backend("auto", BackendOptions(sysfs_root=str(mount(tmp_path, RX6900XT))))
    app = GputopApp(backend, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        app.sampler.tick()
        app.sampler.tick()
        await settle(pilot)
        screen = "\n".join(visible_lines(app))
    assert "nvml+amd" in screen and "SIMULATED" not in screen
    assert " 2 AMD GPU 1002:73BF" in screen and screen.count("H100") >= 2
