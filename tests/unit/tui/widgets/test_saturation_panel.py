"""The saturation panel renders in a Pilot test: blocks, verdicts, hints, the no-GPM note."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace

import pytest
from textual.app import App, ComposeResult

from gputop.analysis.pipeline import default_analyzer
from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.core.model import Saturation
from gputop.history import History
from gputop.sampler import Sampler
from gputop.tui.widgets.saturation import (
    GpuSaturation,
    SaturationPanel,
    bar,
    gpu_list,
    rate_pair,
    sparkline,
)
from tests.support import paths
from tests.support.hint_fixtures import device, history, proc
from tests.support.tui import drawn_as_textual_draws, screen_lines, wait_until


class PanelApp(App):
    def __init__(self, variables: dict[str, str] | None = None, **kw) -> None:
        self.extra = variables or {}  # read by get_theme_variable_defaults during __init__
        self.panel_kw = kw
        super().__init__()

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return {**super().get_theme_variable_defaults(), **self.extra}

    def compose(self) -> ComposeResult:
        yield SaturationPanel(**self.panel_kw)


def screen_text(app: App) -> str:
    return "\n".join(line.rstrip() for line in screen_lines(app))


def sim_history(scenario: str, seconds: float = 60.0):
    snap, hist, _ = sim_samples(scenario, seconds)
    return snap, hist


def sim_samples(scenario: str, seconds: float = 60.0):
    """The newest snapshot, the sampler's history and every snapshot it took, oldest first."""
    backend = SimBackend(BackendOptions(scenario=scenario, sim_speed=1e6))
    backend.open()
    sampler = Sampler(backend, analyze=default_analyzer())
    taken: list = []
    sampler.subscribe(taken.append)
    snap = sampler.run_for(seconds)
    backend.close()
    return snap, sampler.history, taken


async def test_panel_shows_eight_gpus_with_verdicts_and_hints_at_120x40():
    snap, hist = sim_history("straggler")
    app = PanelApp()
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(SaturationPanel)
        panel.update_snapshot(snap, hist)
        await pilot.pause()
        text = screen_text(app)
        assert panel.has_class("-wide") and not panel.compact
        for i in range(8):
            assert f"GPU {i} H100 80GB HBM3" in text
        # GPU 5's verdict (its title cut where the facts below bring a scrollbar)
        assert "straggler: the slow GPU of its" in text
        assert "waits for straggler GPU 5" in text  # its peers' verdicts
        assert "busy = GPU-Util" in text and "SIMULATED" in text
        assert "est. ~" in text and "/989 TFLOPS tensor" in text
        # the blocks of 8 GPUs fit above the fold; hints follow (scrollable)
        assert text.count("busy ") >= 8
        card = app.query_one("#sat-gpu-5", GpuSaturation)
        # its sparklines read the sampler's history, from before the panel opened
        assert len(card.past("busy", 200)) == len(hist) == 61
        panel.scroll_end(animate=False)  # drawn over more than one frame: the facts come last
        await wait_until(pilot, lambda: "00000000:88:00.0" in screen_text(app), timeout=5)
        text = screen_text(app)
        assert "warning straggler: GPU 5 is the slow one of the 8 GPUs" in text
        # after the hints, each GPU's facts (#27)
        assert " GPU  Bus-Id            Persistence-M  Compute M.  MIG M." in text
        assert "   7  00000000:88:00.0  On             Default     Disabled" in text


async def test_panel_without_gpm_says_what_it_cannot_measure():
    strip = lambda s: replace(s, devices=tuple(  # noqa: E731
        replace(d, name="Tesla V100-SXM2-32GB", saturation=Saturation()) for d in s.devices))
    snap, _, taken = sim_samples("power-capped")
    hist = History.of(strip(s) for s in taken)
    snap = replace(strip(snap), hints=snap.hints)
    app = PanelApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one(SaturationPanel).update_snapshot(snap, hist)
        await pilot.pause()
        text = screen_text(app)
        assert "No saturation measurement on this GPU" in text
        assert "NVML GPM" in text and "Hopper" in text
        assert "not measured: SM, occupancy, tensor, DRAM (needs GPM)" in text
        assert "clock slowdowns: power cap" in text
        assert "pSM" in text and "clk" in text and "pwr" in text
        assert "est. ~" not in text  # nothing estimated from shares that were not measured
        assert "PCIe" not in text  # no link rate either: no line of N/A


async def test_a_gpu_without_gpm_shows_the_link_rates_its_driver_counts():
    links = Saturation(pcie_tx_mibps=88.0, pcie_rx_mibps=297.0)  # NVML's counters, no GPM
    snap, hist = sim_history("power-capped")
    snap = replace(snap, devices=tuple(
        replace(d, name="NVIDIA A100-SXM4-80GB", saturation=links) for d in snap.devices))
    app = PanelApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one(SaturationPanel).update_snapshot(snap)
        await pilot.pause()
        text = screen_text(app)
        assert "not measured: SM, occupancy, tensor, DRAM (needs GPM)" in text
        assert "PCIe ↓297 ↑88 MiB/s   NVLink N/A" in text


async def test_sixteen_gpus_use_the_compact_form():
    snap, hist = sim_history("dense-16", seconds=20)
    app = PanelApp()
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(SaturationPanel)
        panel.update_snapshot(snap, hist)
        await pilot.pause()
        text = screen_text(app)
        assert panel.compact and panel.has_class("-compact")
        lines = [line for line in text.splitlines() if re.match(r"\s*GPU\d", line)]
        assert len(lines) == 16 and all("busy" in line and "SM" in line for line in lines)
        # a V100 has no GPM: its SM saturation is unknown, not simulated (#27)
        assert all("no GPM" in line for line in lines)
        assert all(card.size.height == 1 for card in app.query(GpuSaturation))


async def test_theme_gauge_variables_are_used_and_ansi_colours_work():
    app = PanelApp(variables={"gauge-low": "ansi_green", "gauge-mid": "#ffd75f80",
                              "gauge-high": "#ff6f5f", "gauge-empty": "#3a444f"})
    h = history(12, lambda i: [device(0), device(1, utilization_gpu_pct=60.0,
                                               processes=(proc(2),))])
    async with app.run_test(size=(100, 30)) as pilot:
        app.query_one(SaturationPanel).update_snapshot(h[-1], History.of(h))
        await pilot.pause()
        card = app.query_one("#sat-gpu-0", GpuSaturation)
        colors = card._colors()
        assert str(colors["gauge-high"].color.name).lower() == "#ff6f5f"
        assert "GPU 1" in screen_text(app)


async def test_updates_append_history_and_handle_a_lost_gpu():
    app = PanelApp(compact=False)
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(SaturationPanel)
        past = History()
        for i in range(5):
            snap = history(1, lambda _, i=i: [device(0, utilization_gpu_pct=10.0 * i),
                                         device(1, status="lost", status_reason="Xid 79",
                                                utilization_gpu_pct=None)],
                           end=1000.0 + i)[0]
            past.append(snap)
            panel.update_snapshot(snap, past)
            await pilot.pause()
        card = app.query_one("#sat-gpu-0", GpuSaturation)
        assert card.past("busy", 10) == [0.0, 10.0, 20.0, 30.0, 40.0]  # the sampler's history
        assert "lost: Xid 79" in screen_text(app)


def test_bar_and_sparkline_helpers():
    assert bar(50.0, 4) == ("██", "░░")
    assert bar(None, 3) == ("", "   ")
    assert bar(150.0, 2) == ("██", "")
    assert sparkline([0.0, 100.0, None], 3) == "▁█ "
    assert sparkline([50.0], 3) == "  ▄"


async def test_cards_follow_the_devices_in_the_snapshot():
    app = PanelApp()
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(SaturationPanel)
        panel.update_snapshot(history(1, lambda _: [device(0), device(1), device(2)])[0])
        await pilot.pause()
        panel.update_snapshot(history(1, lambda _: [device(2)], end=2e9)[0])
        await pilot.pause()
        assert [c.index for c in app.query(GpuSaturation)] == [2]
        assert "GPU 0" not in screen_text(app)


def test_rate_pair_and_gpu_list():
    assert rate_pair(300.0, 90.0) == "↓300 ↑90 MiB/s"
    assert rate_pair(45000.0, 512.0) == "↓43.9 ↑0.5 GiB/s"
    assert rate_pair(None, None) == "N/A"
    assert gpu_list([1, 2, 3, 4, 5, 6, 7]) == "1-7"
    assert gpu_list([0, 1, 3, 5, 6, 7]) == "0, 1, 3, 5-7"


def test_hints_of_many_gpus_are_grouped():
    from gputop.core.model import Hint

    text = SaturationPanel.hints_text([Hint(i, "memory-bound", "info", f"GPU {i} m", "adv")
                                       for i in range(8)]).plain
    assert text.count("memory-bound") == 1 and "(also GPU 1-7)" in text
    assert text.count("adv") == 1


async def test_eight_gpus_on_a_small_terminal_switch_to_the_compact_form():
    snap, hist = sim_history("training", seconds=20)
    app = PanelApp()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(SaturationPanel)
        panel.update_snapshot(snap, hist)
        await pilot.pause()
        assert panel.compact
        # one line of bars, and the verdict below it where 80 columns cannot hold both
        assert all(card.size.height in (1, 2) for card in app.query(GpuSaturation))
        await pilot.resize_terminal(120, 40)
        await wait_until(pilot, lambda: not panel.compact and all(
            card.size.height == 7 for card in app.query(GpuSaturation)), timeout=5)
        assert panel.has_class("-wide")


async def test_fake_nvml_node_gpm_h100_beside_pre_hopper_a100():
    """End to end through the NVML backend on the fake pynvml: measured vs fallback, per GPU."""

    from gputop.analysis.saturation import estimates
    from gputop.backends.base import BackendOptions
    from gputop.backends.nvml.backend import NvmlBackend
    from tests.support.fake_pynvml import FakeNvml, ManualClock, a100, h100


    clock = ManualClock()
    backend = NvmlBackend(BackendOptions(), nvml=FakeNvml([h100(0), a100(1)], clock=clock.wall),
                          clock=clock)
    with backend:
        sampler = Sampler(backend, analyze=default_analyzer())
        snap = sampler.run_for(20)
        hist = sampler.history
    hopper, ampere = snap.devices
    assert hopper.saturation.source == "gpm" and ampere.saturation.source is None
    est = estimates(hopper)
    assert est.tensor_tflops_estimate is not None and est.spec.key == "h100-sxm"
    assert estimates(ampere).tensor_tflops_estimate is None  # no GPM: nothing to estimate from

    app = PanelApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one(SaturationPanel).update_snapshot(snap, hist)
        await pilot.pause()
        text = screen_text(app)
        assert "GPU 1: No saturation measurement on this GPU" in text  # only the A100 lacks GPM
        assert "GPU 0: No saturation" not in text and "GPU 0, 1:" not in text
        assert "SIMULATED" not in text
        assert "not measured: SM, occupancy, tensor, DRAM (needs GPM)" in text  # A100 block
        assert "est. ~" in text and "/989 TFLOPS tensor" in text  # H100 block


async def test_mig_gpus_show_each_gpu_instances_own_gpm_under_their_line():
    snap, hist = sim_history("mig", seconds=20.0)
    app = PanelApp()
    async with app.run_test(size=(160, 60)) as pilot:  # each verdict on its GPU's line
        panel = app.query_one(SaturationPanel)
        panel.update_snapshot(snap, hist)
        await pilot.pause()
        assert panel.compact  # a MIG GPU's instances follow its line
        lines = screen_text(app).splitlines()
        for dev in snap.devices:
            head = next(n for n, line in enumerate(lines) if line.startswith(f" GPU{dev.index} "))
            if not dev.mig_instances:
                assert not lines[head + 1].startswith("   ├")
                continue
            assert f"MIG: {len(dev.mig_instances)} GPU instance" in lines[head]
            assert "utilization N/A" in lines[head]
            rows = lines[head + 1:head + 1 + len(dev.mig_instances)]
            for inst, row in zip(dev.mig_instances, rows, strict=True):
                assert row.startswith(f"   {'└' if inst is dev.mig_instances[-1] else '├'} "
                                      f"{inst.profile:<11}GI {inst.gpu_instance_id:<3} SM ")
                sat = inst.saturation
                for label, value in (("SM", sat.sm_active_pct), ("TC", sat.tensor_active_pct),
                                     ("DRAM", sat.dram_bw_pct), ("occ", sat.sm_occupancy_pct)):
                    assert f"{label} " in row and f"{value:4.0f}%" in row.split(f"{label} ", 1)[1]


async def test_the_panel_is_drawn_in_its_final_form_from_its_first_frame(monkeypatch):
    # `s` on the dashboard: the screen feeds its panel the sample on screen before any layout.
    # The panel took its form from its size, none yet: one column of blocks drawn first, then
    # two, then narrower still once the facts below brought a scrollbar (#26).
    from gputop.tui.screens.saturation import SaturationScreen
    from tests.support.tui import make_app, settle

    widths: list[tuple[int, int]] = []
    render = GpuSaturation.render

    def drawn(card: GpuSaturation):
        widths.append((card.index, card.size.width))
        return render(card)

    monkeypatch.setattr(GpuSaturation, "render", drawn)
    app = make_app("training")
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        assert isinstance(app.screen, SaturationScreen)
        final = {card.index: card.size.width for card in app.screen.query(GpuSaturation)}
        assert len(final) == 8 and app.screen.query_one(SaturationPanel).has_class("-wide")
        assert widths and set(widths) == set(final.items())


@pytest.mark.parametrize("scenario, size", [("straggler", (120, 40)), ("power-capped", (90, 40)),
                                            ("dense-16", (120, 40)), ("mig", (100, 60))])
async def test_the_blocks_are_the_cells_textual_would_draw(scenario, size):
    # the blocks draw their Text as Strips of their own (widgets/strips.py TextLines), each
    # line as Textual's content would draw it: blocks with and without GPM, compact lines,
    # a MIG GPU's instance lines, a verdict wrapped under its line at 90 columns
    snap, hist = sim_history(scenario, seconds=20.0)
    if scenario == "power-capped":  # no GPM: the time-based view
        snap = replace(snap, devices=tuple(replace(d, saturation=Saturation())
                                           for d in snap.devices))
    app = PanelApp(compact=True if scenario == "power-capped" else None)
    async with app.run_test(size=size) as pilot:
        app.query_one(SaturationPanel).update_snapshot(snap, hist)
        await pilot.pause()
        cards = list(app.query(GpuSaturation))
        assert len(cards) == len(snap.devices)
        for card in cards:
            assert drawn_as_textual_draws(card), card.index


async def test_a_block_is_built_once_per_sample_whatever_the_frames(monkeypatch):
    # the panel's first open drew each block in four frames, building its Text each time (#26)
    built: list[int] = []
    content = GpuSaturation._content

    def counted(card: GpuSaturation, width: int):
        built.append(card.index)
        return content(card, width)

    monkeypatch.setattr(GpuSaturation, "_content", counted)
    snap, hist = sim_history("straggler", seconds=5.0)
    app = PanelApp()
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(SaturationPanel)
        panel.update_snapshot(snap, hist)
        await pilot.pause()
        card = app.query_one("#sat-gpu-0", GpuSaturation)
        for _ in range(3):  # frames with nothing new
            card.refresh()
            await pilot.pause()
        assert built.count(0) == 1
        panel.update_snapshot(snap, hist)  # a sample
        await pilot.pause()
        assert built.count(0) == 2
        before = list(card.render_line(1))
        app.theme = next(name for name in app.available_themes if name != app.theme)
        await pilot.pause()
        assert built.count(0) == 3 and list(card.render_line(1)) != before  # its colours


def test_the_peaks_table_is_read_only_where_an_estimate_is_drawn():
    # GPUs without GPM (V100s in dense-16) draw no estimate: the panel opens without loading
    # the peaks table's module and its dataclass (about 2 ms of the first `s`, #26)
    code = """
import asyncio, sys
from tests.unit.tui.widgets.test_saturation_panel import PanelApp, SaturationPanel, sim_history

async def main(scenario):
    snap, hist = sim_history(scenario, seconds=3)
    async with PanelApp(compact=False).run_test(size=(120, 60)) as pilot:
        pilot.app.query_one(SaturationPanel).update_snapshot(snap, hist)
        await pilot.pause()
    print(scenario, "gputop.analysis.peaks" in sys.modules)

asyncio.run(main(sys.argv[1]))
"""
    for scenario, loaded in (("dense-16", False), ("training", True)):
        run = subprocess.run([sys.executable, "-c", code, scenario], capture_output=True,
                             text=True, cwd=paths.ROOT, env=dict(os.environ,
                                                                 PYTHONPATH=str(paths.ROOT)))
        assert run.returncode == 0, run.stderr
        assert run.stdout.split() == [scenario, str(loaded)]
