"""Format a reported value as text, the same way in every view: the dashboard, the compact and
cluster tables, the advisor's report and the saturation verdicts.

Pure and Textual-free, so any layer may import it. A value the device did not report is ``N/A``
(or the caller's ``none``), never 0.
"""

from __future__ import annotations

from gputop.core.units import GIB, MIB_PER_GIB

NA = "N/A"
# In place of the command of a process the device lists but the host no longer has (Process.gone):
# not N/A, which says a value is unreported, where here the process itself has exited.
GONE = "gone"


def on_off(flag: bool | None) -> str:
    """A mode nvidia-smi shows as On or Off (persistence, display active); N/A where unreported."""
    return NA if flag is None else ("On" if flag else "Off")


def mig_word(mode: str | None) -> str | None:
    """A MIG mode ("enabled", "disabled") as nvidia-smi prints it; None where there is none."""
    return mode.capitalize() if mode is not None else None


def num(value: float | None, spec: str = ".0f", unit: str = "", none: str = NA) -> str:
    """Format ``value`` with ``spec`` and ``unit`` appended, or ``none`` where it is missing."""
    return none if value is None else f"{value:{spec}}{unit}"


def pct(value: float | None, cells: int = 5) -> str:
    """Right-align a percentage in ``cells`` ('  95%'); '  N/A' (not 'N/A%') where it is missing."""
    return f"{NA:>{cells}}" if value is None else f"{value:{cells - 1}.0f}%"


def mib(value: float | None) -> str:
    """Show GPU memory the way nvidia-smi users read it: MiB, switching to GiB past 99999 MiB."""
    if value is None:
        return NA
    if value < 100000:
        return f"{value:.0f}MiB"
    return f"{value / MIB_PER_GIB:.1f}GiB"


def host_mem(value: float | None) -> str:
    """Show a process's host memory in MiB, switching to GiB from 1 GiB."""
    if value is None:
        return NA
    if value < MIB_PER_GIB:
        return f"{value:.0f}MiB"
    return f"{value / MIB_PER_GIB:.1f}GiB"


def short_mib(value: float | None) -> str:
    """Show a node's memory in at most five cells: '512M', '80G', '1.2T'."""
    if value is None:
        return NA
    if value >= MIB_PER_GIB * MIB_PER_GIB:
        return f"{value / MIB_PER_GIB / MIB_PER_GIB:.1f}T"
    if value >= MIB_PER_GIB:
        return f"{value / MIB_PER_GIB:.0f}G"
    return f"{value:.0f}M"


def duration(seconds: float | None) -> str:
    """Show a running time: `m:ss` under an hour, then `11h09m`, then `2d03h`.

    Past an hour the seconds carry no information and would repaint every row every second.
    """
    if seconds is None or seconds < 0:
        return NA
    s = int(seconds)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}:{s:02d}"


def idle_text(seconds: float | None) -> str:
    """The IDLE cell (gputop.analysis.waste): `-` for never held idle, else how long, as
    ``duration`` shows a running time; N/A where no ledger ran (a recording without it)."""
    if seconds is None:
        return NA
    return duration(seconds) if seconds > 0 else "-"


def gib_pair(used: int, total: int) -> str:
    """Show used and total bytes of host RAM or swap in GiB, the unit once: `61.2/503.5G`."""
    return f"{used / GIB:.1f}/{total / GIB:.1f}G"
