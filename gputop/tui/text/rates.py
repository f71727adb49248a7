"""The wide card's fifth line: video engines and link traffic.

``ENC   3% DEC   0%  PCIe TX   90 RX  300 MiB/s  NVLink TX 19.5 RX 19.5 GiB/s``

Shown only where a card is at least ``RATES_CARD_WIDTH`` cells wide (two cards to a row from 154
columns; see ``rates_layout`` in dashboard.py), and read from the device only while it shows
(``gputop.tui.text.wants.WIDE_CARDS``). The link rates are GPM's, or on a GPU without GPM the
driver's own PCIe and NVLink counters (NVML). Pure text, no Textual: a value the device does not
report is N/A, never 0.
"""

from __future__ import annotations

from gputop.core.formatting import NA, pct
from gputop.core.model import Device, Saturation
from gputop.core.units import MIB_PER_GIB
from gputop.core.vendors import has_nvidia_figures

RATES_CARD_WIDTH = 76  # the line below at its longest

Span = tuple[str, str]


def link_text(tx: float | None, rx: float | None) -> tuple[str, str, str]:
    """(TX, RX, unit) of one link in MiB/s: both in the unit the larger needs, four cells each
    (`  90`/` 300`/`MiB/s`, `19.5`/` 429`/`GiB/s`)."""
    present = [v for v in (tx, rx) if v is not None]
    if not present:
        return f"{NA:>4}", f"{NA:>4}", ""
    gib = max(present) >= MIB_PER_GIB

    def one(value: float | None) -> str:
        if value is None:
            return f"{NA:>4}"
        if not gib:
            return f"{value:4.0f}"
        value /= MIB_PER_GIB
        return f"{value:4.1f}" if value < 99.95 else f"{value:4.0f}"

    return one(tx), one(rx), "GiB/s" if gib else "MiB/s"


def rates_spans(dev: Device) -> list[Span]:
    """The line as (text, component class) spans, for GpuCard to cut or pad to its width. An
    AMD or Intel GPU gets its PCIe link only: NVENC/NVDEC and NVLink are NVIDIA's, and the model
    holds no video-engine or xGMI figures for the others to stand in."""
    sat = dev.saturation or Saturation()
    links = [("PCIe", sat.pcie_tx_mibps, sat.pcie_rx_mibps)]
    spans: list[Span] = []
    if has_nvidia_figures(dev.vendor):
        spans += [
            ("ENC ", "gpu--label"), (pct(dev.utilization_encoder_pct, 4), "gpu--value"),
            (" DEC ", "gpu--label"), (pct(dev.utilization_decoder_pct, 4), "gpu--value"),
        ]
        links.append(("NVLink", sat.nvlink_tx_mibps, sat.nvlink_rx_mibps))
    for name, tx, rx in links:
        tx_text, rx_text, unit = link_text(tx, rx)
        lead = "  " if spans else ""
        spans += [(f"{lead}{name} TX ", "gpu--label"), (tx_text, "gpu--value"),
                  (" RX ", "gpu--label"), (rx_text, "gpu--value")]
        if unit:
            spans.append((f" {unit}", "gpu--muted"))
    return spans
