"""The wide cards' rates line: encoder/decoder %, PCIe and NVLink traffic, where there is room."""

from __future__ import annotations

from gputop.core.model import Device, Saturation
from gputop.tui.text.rates import link_text, rates_spans
from gputop.tui.widgets.dashboard import rates_layout
from tests.support.demo import advance
from tests.support.tui import make_app, settle


def text(spans) -> str:
    return "".join(t for t, _ in spans)


def test_values_the_device_does_not_report_are_na_never_zero():
    line = text(rates_spans(Device(index=0, saturation=Saturation())))
    assert line == "ENC  N/A DEC  N/A  PCIe TX  N/A RX  N/A  NVLink TX  N/A RX  N/A"
    assert "0" not in line
    one_missing = Device(index=0, utilization_encoder_pct=0, saturation=Saturation(
        pcie_tx_mibps=12.0, nvlink_rx_mibps=2048.0))
    assert text(rates_spans(one_missing)) == (
        "ENC   0% DEC  N/A  PCIe TX   12 RX  N/A MiB/s  NVLink TX  N/A RX  2.0 GiB/s")


def test_a_link_shows_both_directions_in_the_unit_the_larger_needs():
    assert link_text(90.4, 300.0) == ("  90", " 300", "MiB/s")
    assert link_text(900.0, 19968.0) == (" 0.9", "19.5", "GiB/s")
    assert link_text(439296.0, 102400.0) == (" 429", " 100", "GiB/s")
    assert link_text(None, None) == ("N/A".rjust(4), "N/A".rjust(4), "")


def test_the_line_fits_the_narrowest_card_that_gets_it():
    from gputop.tui.text.rates import RATES_CARD_WIDTH

    widest = Device(index=0, utilization_encoder_pct=100, utilization_decoder_pct=100,
                    saturation=Saturation(pcie_tx_mibps=1023.0, pcie_rx_mibps=1023.0,
                                          nvlink_tx_mibps=4e5, nvlink_rx_mibps=4e5))
    assert len(text(rates_spans(widest))) < RATES_CARD_WIDTH


def test_rates_need_two_76_column_cards_for_eight_gpus_and_room_for_the_table():
    assert rates_layout(153, 60, 8, plot=False) is None  # one card a row: never a tall column
    assert rates_layout(153, 60, 2, plot=False) is None
    assert rates_layout(154, 60, 8, plot=False) == (2, 23)
    assert rates_layout(154, 30, 8, plot=False) is None  # no room left for the process table
    assert rates_layout(154, 42, 8, plot=True) is None  # nor with the history plot
    assert rates_layout(154, 43, 8, plot=True) == (2, 23)
    assert rates_layout(80, 24, 1, plot=False) == (1, 5)  # one GPU: its card is wide enough


async def test_a_wide_terminal_shows_the_rates_the_simulator_fills():
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        advance(app, 5)
        await settle(pilot)
        assert app.dashboard.rates
        card = app.dashboard.cards[0]
        lines = card.line_texts()
        assert len(lines) == 5
        assert lines[4].startswith("ENC   0% DEC   0%  PCIe TX ")
        assert "MiB/s  NVLink TX " in lines[4] and lines[4].rstrip().endswith("GiB/s")
        assert "N/A" not in lines[4]  # the simulator reports every one of them
        panel = app.dashboard.panel
        assert panel.cards[0].own_height() == 5 and panel.size.height == 4 * 6 - 1
        assert "wide-cards" in app.sampler._wants


async def test_narrowing_the_terminal_drops_the_line_and_its_reads():
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        advance(app, 2)
        await settle(pilot)
        assert app.dashboard.rates
        await pilot.resize_terminal(120, 40)
        advance(app, 1)
        await settle(pilot)
        assert not app.dashboard.rates
        assert all(len(c.line_texts()) == 4 for c in app.dashboard.cards.values())
        assert "wide-cards" not in app.sampler._wants
        assert "utilization_encoder_pct" not in app.sampler.wants
        await pilot.resize_terminal(200, 60)
        await settle(pilot)
        assert "wide-cards" in app.sampler._wants


async def test_a_screen_over_the_dashboard_stops_the_rates_reads_a_dialog_does_not():
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        advance(app, 2)
        await settle(pilot)
        assert "wide-cards" in app.sampler._wants
        await pilot.press("d")  # the process view covers the cards
        await settle(pilot)
        assert "wide-cards" not in app.sampler._wants
        await pilot.press("escape")
        await settle(pilot)
        assert "wide-cards" in app.sampler._wants
        await pilot.press("question_mark")  # help floats over the cards, still in view
        await settle(pilot)
        assert "wide-cards" in app.sampler._wants


def test_six_digit_memory_is_never_cut_to_an_ellipsis():
    """An MI300X (or an H200) nearly full: `168000/196592MiB  85%` is 21 cells in a 20-cell
    column and read `…MiB  8…`. It drops the percent's padding, then turns to GiB."""
    from gputop.tui.widgets.gpu import memory_text

    assert memory_text(62000, 81559, 76.0, 20) == "62000/81559MiB  76%"  # as before
    assert memory_text(168000, 196592, 85.4, 20) == "168000/196592MiB 85%"
    assert memory_text(196592, 196592, 100.0, 20) == "192.0/192.0GiB 100%"
    assert memory_text(None, 196592, None, 20) == "N/A/196592MiB N/A%"
