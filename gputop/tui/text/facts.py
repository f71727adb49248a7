"""A GPU's slow facts, in nvidia-smi's words: its Bus-Id, persistence mode, compute mode and MIG
mode (what nvidia-smi's table and nvitop's cards show beside the readings).

Pure text, no Textual. The wide card (gputop/tui/widgets/gpu.py) shows them where it is at least
``FACTS_CARD_WIDTH`` wide, the saturation panel (gputop/tui/widgets/saturation.py) always, as a
table of one line per GPU. They are read on a slow
schedule (gputop.tui.text.wants), never on each tick. A value the device does not report is N/A;
a GPU without MIG has no MIG mode to show.
"""

from __future__ import annotations

from collections.abc import Sequence

from gputop.core.formatting import NA, mig_word, on_off
from gputop.core.model import COMPUTE_MODES, Device
from gputop.core.vendors import has_nvidia_figures

# nvidia-smi's table heads for these columns.
BUS_ID = "Bus-Id"
PERSISTENCE = "Persistence-M"
COMPUTE = "Compute M."
MIG = "MIG M."
# The card's column of modes at its widest ("Compute M. Exclusive_Process").
FACTS_WIDTH = max(len(f"{label} {value}") for label, value in (
    *((COMPUTE, mode) for mode in COMPUTE_MODES), (PERSISTENCE, NA), (MIG, "Disabled")))
# A card this wide keeps 12-cell bars and sparklines beside the column: label (5), bar, value
# (21), sparkline and the column with a cell before it.
FACTS_CARD_WIDTH = 5 + 12 + 21 + 1 + 12 + 1 + FACTS_WIDTH


def mode_facts(dev: Device) -> list[tuple[str, str]]:
    """(label, value) of the GPU's modes: persistence (On/Off), compute mode (Default,
    Exclusive_Process, Prohibited) and, where the GPU has MIG, the MIG mode. Empty for an AMD
    or Intel GPU, whose drivers have no such modes (an N/A would suggest they could)."""
    if not has_nvidia_figures(dev.vendor):
        return []
    out = [(PERSISTENCE, on_off(dev.persistence_mode)), (COMPUTE, dev.compute_mode or NA)]
    mig = mig_word(dev.mig_mode)
    if mig is not None:
        out.append((MIG, mig))
    return out


def facts(dev: Device) -> list[tuple[str, str]]:
    """(label, value) of every fact: the Bus-Id, then the modes."""
    return [(BUS_ID, dev.pci_bus_id or NA), *mode_facts(dev)]


def facts_table(devices: Sequence[Device]) -> list[str]:
    """The facts of ``devices`` as nvidia-smi lays out a table: a line of heads, then one line
    per GPU, each column as wide as its widest cell (65 cells for H100s). A mode column is left
    out where no GPU has that mode (MIG; every mode on AMD and Intel), and blank for one that
    has none."""
    rows = [{"GPU": str(dev.index), **dict(facts(dev))} for dev in devices]
    heads = ["GPU", BUS_ID] + [h for h in (PERSISTENCE, COMPUTE, MIG) if any(h in r for r in rows)]
    widths = [max(len(h), *(len(r.get(h, "")) for r in rows)) for h in heads]
    lines = []
    for cells in ([dict(zip(heads, heads, strict=True))] + rows):
        line = "  ".join(cells.get(h, "").rjust(w) if h == "GPU" else cells.get(h, "").ljust(w)
                         for h, w in zip(heads, widths, strict=True))
        lines.append(line.rstrip())
    return lines
