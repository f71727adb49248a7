"""Bus-Id, persistence, compute mode and MIG mode (#27): on cards wide enough, always in the
saturation panel's GPU sections, N/A where the device does not report them."""

from __future__ import annotations

from gputop.core.model import Device
from gputop.tui.text.facts import FACTS_CARD_WIDTH, facts_table, mode_facts
from gputop.tui.widgets.gpu import GpuCard
from tests.support.demo import advance
from tests.support.tui import make_app, settle, visible_lines

H100 = Device(index=0, name="NVIDIA H100 80GB HBM3", pci_bus_id="00000000:18:00.0",
              persistence_mode=True, compute_mode="Exclusive_Process", mig_mode="enabled",
              utilization_gpu_pct=50, memory_used_mib=10, memory_total_mib=100,
              temperature_c=40, power_draw_w=300, power_limit_w=700)


def test_the_modes_in_nvidia_smis_words_and_na_where_unreported():
    assert mode_facts(H100) == [("Persistence-M", "On"), ("Compute M.", "Exclusive_Process"),
                                ("MIG M.", "Enabled")]
    # no MIG on the GPU: no MIG mode; a mode the device does not report: N/A, never Off
    assert mode_facts(Device(index=1)) == [("Persistence-M", "N/A"), ("Compute M.", "N/A")]


def test_the_table_has_a_column_per_fact_and_a_line_per_gpu():
    assert facts_table([H100, Device(index=12, persistence_mode=False)]) == [
        "GPU  Bus-Id            Persistence-M  Compute M.         MIG M.",
        "  0  00000000:18:00.0  On             Exclusive_Process  Enabled",
        " 12  N/A               Off            N/A",  # no MIG on it: nothing, not N/A
    ]
    # no GPU with MIG: no MIG column
    assert facts_table([Device(index=0)]) == ["GPU  Bus-Id  Persistence-M  Compute M.",
                                              "  0  N/A     N/A            N/A"]


def card_text(dev: Device, width: int) -> list[str]:
    card = GpuCard(0)
    card.update(dev, when=1.0)
    card.relines(width)
    return card.line_texts()


def test_a_wide_card_names_the_bus_id_and_its_modes_whole():
    lines = card_text(H100, FACTS_CARD_WIDTH)
    assert lines[0].startswith(" 0 H100 80GB HBM3  00000000:18:00.0 ")
    assert [line.rstrip()[-len(want):] for line, want in zip(lines[1:], (
        "Persistence-M On", "Compute M. Exclusive_Process", "MIG M. Enabled"), strict=True)] \
        == ["Persistence-M On", "Compute M. Exclusive_Process", "MIG M. Enabled"]
    assert all(len(line) == FACTS_CARD_WIDTH for line in lines)


def test_a_narrower_card_keeps_its_bars_and_leaves_the_facts_out():
    lines = card_text(H100, FACTS_CARD_WIDTH - 1)
    assert not any("00000000:18:00.0" in line or "Persistence-M" in line for line in lines)


async def test_at_200_columns_each_card_shows_its_facts_at_120_none():
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        advance(app, 3)
        await settle(pilot)
        screen = "\n".join(visible_lines(app))
        for bus in ("00000000:18:00.0", "00000000:88:00.0"):  # GPU 0 and GPU 7
            assert f"HBM3  {bus} " in screen
        assert screen.count("Persistence-M On") == 8 and screen.count("MIG M. Disabled") == 8
        assert screen.count("Compute M. Default") == 8
        await pilot.resize_terminal(120, 40)
        advance(app, 1)
        await settle(pilot)
        screen = "\n".join(visible_lines(app))
        assert "Persistence-M" not in screen and "00000000:18:00.0" not in screen


async def test_the_saturation_panel_always_shows_each_gpus_facts():
    for size, scenario in (((120, 40), "training"), ((80, 24), "dense-16"),
                           ((120, 40), "ascend-910b")):
        app = make_app(scenario)
        async with app.run_test(size=size) as pilot:
            advance(app, 3)
            await settle(pilot)
            await pilot.press("s")
            await settle(pilot)
            app.screen.query_one("#saturation").scroll_end(animate=False)
            await settle(pilot)
            screen = "\n".join(visible_lines(app))
            assert " GPU  Bus-Id  " in screen and "  Persistence-M  Compute M." in screen
            if scenario == "ascend-910b":  # npu-smi reports a bus id and none of the modes
                assert "   7  0000:88:00.0  N/A            N/A" in screen
                assert "MIG M." not in screen
            else:
                # a V100 has no MIG: no MIG column
                row = ("  15  00000001:18:00.0  On             Default" if scenario == "dense-16"
                       else "   7  00000000:88:00.0  On             Default     Disabled")
                assert row in screen, size
                assert ("MIG M." in screen) == (scenario == "training")
