"""The wide card's fifth line: video engines and link traffic.

``ENC   3% DEC   0%  PCIe TX   90 RX  300 MiB/s  NVLink TX 19.5 RX 19.5 GiB/s``

Shown only where a card is at least ``RATES_CARD_WIDTH`` cells wide (two cards to a row from 154
columns; see ``rates_layout`` in dashboard.py), and read from the device only while it shows
(``gputop.tui.text.wants.WIDE_CARDS``). Pure text, no Textual: a value the device does not report is
N/A, never 0.
"""

from __future__ import annotations

from gputop.core.model import Device, Saturation
from gputop.tui.text.fmt import NA

RATES_CARD_WIDTH = 76  # the line below at its longest
GIB = 1024.0

Span = tuple[str, str]


def pct_text(value: float | None) -> str:
    return f"{NA:>4}" if value is None else f"{value:3.0f}%"


def link_text(tx: float | None, rx: float | None) -> tuple[str, str, str]:
    """(TX, RX, unit) of one link in MiB/s: both in the unit the larger needs, four cells each
    (`  90`/` 300`/`MiB/s`, `19.5`/` 429`/`GiB/s`)."""
    present = [v for v in (tx, rx) if v is not None]
    if not present:
        return f"{NA:>4}", f"{NA:>4}", ""
    gib = max(present) >= GIB

    def one(value: float | None) -> str:
        if value is None:
            return f"{NA:>4}"
        if not gib:
            return f"{value:4.0f}"
        value /= GIB
        return f"{value:4.1f}" if value < 99.95 else f"{value:4.0f}"

    return one(tx), one(rx), "GiB/s" if gib else "MiB/s"


def rates_spans(dev: Device) -> list[Span]:
    """The line as (text, component class) spans, for GpuCard to cut or pad to its width."""
    sat = dev.saturation or Saturation()
    spans: list[Span] = [
        ("ENC ", "gpu--label"), (pct_text(dev.utilization_encoder_pct), "gpu--value"),
        (" DEC ", "gpu--label"), (pct_text(dev.utilization_decoder_pct), "gpu--value"),
    ]
    for name, tx, rx in (("PCIe", sat.pcie_tx_mibps, sat.pcie_rx_mibps),
                         ("NVLink", sat.nvlink_tx_mibps, sat.nvlink_rx_mibps)):
        tx_text, rx_text, unit = link_text(tx, rx)
        spans += [(f"  {name} TX ", "gpu--label"), (tx_text, "gpu--value"),
                  (" RX ", "gpu--label"), (rx_text, "gpu--value")]
        if unit:
            spans.append((f" {unit}", "gpu--muted"))
    return spans
