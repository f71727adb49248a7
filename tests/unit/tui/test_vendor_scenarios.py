"""The dashboard draws the simulated MI300X and Max 1550 as it would the real parts (#32 item 6):
their names, no GPM saturation, and the Max 1550's utilization and memory as N/A."""

from __future__ import annotations

from tests.support.demo import advance
from tests.support.tui import make_app, settle, visible_lines


async def test_the_dashboard_draws_a_simulated_mi300x_node():
    app = make_app("mi300x")
    async with app.run_test(size=(160, 50)) as pilot:
        advance(app, 3)
        await settle(pilot)
        screen = "\n".join(visible_lines(app))
        assert "SIMULATED" in screen and "driver 6.16.13" in screen
        assert screen.count("AMD Instinct MI300X OAM") == 8
        assert "/196592MiB" in screen and "/750W" in screen
        await pilot.press("s")
        await settle(pilot)
        screen = "\n".join(visible_lines(app))
        assert screen.count("not exposed by amdgpu: SM, occupancy, tensor, DRAM") == 8


async def test_the_dashboard_draws_a_simulated_max_1550_node():
    app = make_app("max-1550")
    async with app.run_test(size=(160, 50)) as pilot:
        advance(app, 3)
        await settle(pilot)
        screen = "\n".join(visible_lines(app))
        assert screen.count("Intel GPU 8086:0BD5") == 6
        assert screen.count("N/A/N/AMiB") == 6 and "/600W" in screen
        await pilot.press("s")
        await settle(pilot)
        screen = "\n".join(visible_lines(app))
        assert screen.count("no utilization reading from this device") == 6


async def test_the_saturation_legend_names_the_clock_as_the_vendor_does():
    """On an MI300X node the legend's `clk` is the shader clock (SCLK), not NVIDIA's SM clock."""
    app = make_app("mi300x")
    async with app.run_test(size=(160, 50)) as pilot:
        advance(app, 3)
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        screen = "\n".join(visible_lines(app))
        assert "clk = SCLK clock / max" in screen and "SM clock" not in screen
