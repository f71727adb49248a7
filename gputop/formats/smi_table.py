"""nvidia-smi's default table and `-L` list: written from the model, and read back from captures.

The table is the 91-column layout of the Linux drivers 550 to 595 (real captures in
tests/fixtures/nvidia-smi/); drivers before 580 draw the line under the version banner with "|",
later ones with "+". Every cell of a GPU row and a process row is a model value, so a table read
back and written again reproduces the capture; the MIG rows' BAR1 and engine counts are not in the
model and travel as the captured cells of a :class:`TableMig`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from gputop.core.formatting import mig_word, on_off
from gputop.core.model import Device, MigInstance, Process
from gputop.formats.query_fields import driver_major, format_value, lookup

WIDTH = 89  # between the outer bars
NA = "N/A"
NAME_WIDTH = 27  # GPU names longer than this are cut to 24 characters and "..."
PROCESS_NAME_WIDTH = 32  # process names longer than this keep their last 29 characters
# The table's short forms of compute modes (the query field's form is the key).
# the table's short forms of the compute modes (gputop.core.model.COMPUTE_MODES)
SHORT_MODES = {"Default": "Default", "Exclusive_Process": "E. Process",
               "Exclusive_Thread": "E. Thread", "Prohibited": "Prohibited"}
FULL_MODES = {short: full for full, short in SHORT_MODES.items()}  # read back from a table


@dataclass(frozen=True, slots=True)
class TableMig(MigInstance):
    """A MIG device read from a table: the model's values and the cells it does not hold."""

    bar1: str = ""  # "0MiB / 24739MiB"
    ecc: str = ""  # "0"
    engines: str = ""  # " 3   0    3    0    3"


def banner_rule(driver: str | None) -> str:
    """The line under the version banner: "|---" before driver 580, "+---" from 580 on."""
    major = driver_major(driver)
    edge = "|" if major is not None and major < 580 else "+"
    return f"{edge}{'-' * 41}+{'-' * 24}+{'-' * 22}+"





def stamp(t: float) -> str:
    """nvidia-smi's time stamp: "Thu Jan  4 14:41:13 2024" (local time)."""
    return time.strftime("%a %b %e %H:%M:%S %Y", time.localtime(t))


def _n(value: float | None, unit: str = "") -> str:
    return NA if value is None else f"{value:.0f}{unit}"


def _mib(field: str, value: float | None) -> str:
    """Memory as the query field ``field`` rounds it (up, as nvidia-smi does), then "MiB"."""
    return NA if value is None else format_value(lookup(field), value, units=False) + "MiB"


def gpu_name(name: str | None) -> str:
    name = name or NA
    return name if len(name) <= NAME_WIDTH else name[:NAME_WIDTH - 3] + "..."


def process_name(name: str | None, width: int = PROCESS_NAME_WIDTH) -> str:
    name = name or NA
    return name if len(name) <= width else "..." + name[-(width - 3):]


def _ecc(dev: Device) -> str:
    if dev.ecc_mode is None:
        return NA
    if not dev.ecc_mode:
        return "Off"
    if dev.mig_mode == "enabled":  # the counts are per GPU instance: the GPU row says "On"
        return "On"
    return _n(dev.ecc_errors_uncorrected_volatile)


def _mig(dev: Device) -> str:
    return mig_word(dev.mig_mode) or NA


def gpu_rows(dev: Device) -> list[str]:
    """The three lines of one GPU."""
    power = f"{_n(dev.power_draw_w, 'W'):>15} / {_n(dev.power_limit_w, 'W'):>5}"
    memory = (f"{_mib('memory.used', dev.memory_used_mib):>10} / "
              f"{_mib('memory.total', dev.memory_total_mib):>9}")
    mode = SHORT_MODES.get(dev.compute_mode or "", dev.compute_mode or NA)
    return [
        f"| {dev.index:>3}  {gpu_name(dev.name):<{NAME_WIDTH}}    {on_off(dev.persistence_mode):<3} |"
        f" {dev.pci_bus_id or NA:>18} {on_off(dev.display_active):>3} | {_ecc(dev):>20} |",
        f"| {_n(dev.fan_pct, '%'):>3}   {_n(dev.temperature_c, 'C'):>3}    {dev.pstate or NA:<3}"
        f"{power} | {memory} | {_n(dev.utilization_gpu_pct, '%'):>7} {mode:>12} |",
        f"| {'':39} | {'':22} | {_mig(dev):>20} |",
    ]


def mig_rows(dev: Device, mig: MigInstance) -> list[str]:
    used = f"{_mib('memory.used', mig.memory_used_mib)} / {_mib('memory.total', mig.memory_total_mib):>8}"
    cells = mig if isinstance(mig, TableMig) else None
    bar1 = cells.bar1 if cells else f"{NA} / {NA}"
    ecc = cells.ecc if cells else NA
    engines = cells.engines if cells else f"{NA:^21}"
    index = NA if mig.index is None else str(mig.index)
    return [
        f"| {dev.index:>2}  {mig.gpu_instance_id:>3} {mig.compute_instance_id:>3} {index:>3}  |"
        f" {used:>29}    | {_n(mig.sm_count):<3}{ecc:>6} | {engines:<21} |",
        f"| {'':16} | {bar1:>29}    | {'':9} | {'':21} |",
    ]


def _id(value: int | None) -> str:
    return NA if value is None else str(value)


def _instance(value: int | None) -> str:
    # A GPU or compute instance id sits one column left of N/A's right edge.
    return NA if value is None else f"{value:>2} "


def _widths(driver: str | None) -> tuple[int, int]:
    """The process box's PID and name widths: before driver 570 the PID column is 6 narrower and
    the name 6 wider (the column titles of the 550-565 captures say so)."""
    major = driver_major(driver)
    return (8, PROCESS_NAME_WIDTH + 6) if major is not None and major < 570 else (
        14, PROCESS_NAME_WIDTH)


def process_row(dev: Device, proc: Process, name: str | None, driver: str | None) -> str:
    pid_width, name_width = _widths(driver)
    return (f"| {dev.index:>4}   {_instance(proc.gpu_instance_id):>3}  "
            f"{_instance(proc.compute_instance_id):>3}  {proc.pid:>{pid_width}}  "
            f"{proc.type or 'C':>5}   {process_name(name, name_width):<{name_width}}"
            f"  {_n(proc.gpu_memory_mib, 'MiB'):>12} |")


def process_head(driver: str | None) -> list[str]:
    pad = " " * (_widths(driver)[0] - 8)
    return [
        _bar(" Processes:"),
        _bar(f"  GPU   GI   CI        {pad}PID   Type   Process name{' ' * (30 - len(pad))}"
             "GPU Memory"),
        _bar("        ID   ID                                                               Usage"),
        "|" + "=" * WIDTH + "|",
    ]


def _blank(driver: str | None) -> str:
    """The line before the Processes box: spaces across the table before driver 570."""
    major = driver_major(driver)
    return " " * WIDTH if major is not None and major < 570 else ""


def _bar(text: str) -> str:
    return f"|{text:<{WIDTH}}|"


RULE = "+" + "-" * WIDTH + "+"
GPU_HEAD = [
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
    "|                                         |                        |               MIG M. |",
    f"|{'=' * 41}+{'=' * 24}+{'=' * 22}|",
]
GPU_RULE = f"+{'-' * 41}+{'-' * 24}+{'-' * 22}+"
MIG_RULE = f"+{'-' * 18}+{'-' * 34}+{'-' * 11}+{'-' * 23}+"
MIG_HEAD = [
    RULE,
    _bar(" MIG devices:"),
    MIG_RULE,
    "| GPU  GI  CI  MIG |              Shared Memory-Usage |        Vol|        Shared         |",
    "|      ID  ID  Dev |                Shared BAR1-Usage | SM     Unc| CE ENC  DEC  OFA  JPG |",
    "|                  |                                  |        ECC|                       |",
    f"|{'=' * 18}+{'=' * 34}+{'=' * 11}+{'=' * 23}|",
]


@dataclass(frozen=True, slots=True)
class TableRow:
    """One GPU of the table and the names its processes are shown by."""

    device: Device
    names: Sequence[str | None]  # per process of ``device.processes``


def render(rows: Sequence[TableRow], when: float, smi_version: str | None,
           driver: str | None, cuda: str | None, layout_version: str | None = None) -> str:
    """The whole table, as `nvidia-smi` prints it, in the layout of ``layout_version`` (the
    driver's own by default)."""
    gen = layout_version or driver
    out = [f"{stamp(when)}       ", RULE,
           f"| NVIDIA-SMI {smi_version or NA:<23}Driver Version: {driver or NA:<15}"
           f"CUDA Version: {cuda or NA:<9}|",
           banner_rule(gen), *GPU_HEAD]
    for row in rows:
        out += gpu_rows(row.device)
        out.append(GPU_RULE)
    migs = [(r.device, m) for r in rows for m in r.device.mig_instances]
    if migs:
        out += ["", *MIG_HEAD]
        for dev, mig in migs:
            out += mig_rows(dev, mig)
            out.append(MIG_RULE)
    out += [_blank(gen), RULE, *process_head(gen)]
    procs = [(r.device, r.device.processes[i], r.names[i])
             for r in rows for i in listing_order(r.device.processes)]
    if procs:
        out += [process_row(d, p, n, gen) for d, p, n in procs]
    else:
        out.append(_bar("  No running processes found"))
    out.append(RULE)
    return "\n".join(out) + "\n"


def listing_order(processes: Sequence[Process]) -> list[int]:
    """Return the positions of a GPU's processes in the order nvidia-smi's table and ``-q``
    list them: by PID (NVML hands them over in its own order, which ``--query-compute-apps``
    keeps; seen on an H200 with driver 580.159.04, and compute and graphics processes mixed by
    PID in a 595 capture)."""
    return sorted(range(len(processes)), key=lambda i: processes[i].pid)


def list_line(dev: Device) -> list[str]:
    """`nvidia-smi -L`: the GPU's line and one line per MIG device."""
    out = [f"GPU {dev.index}: {dev.name or NA} (UUID: {dev.uuid or NA})"]
    for mig in dev.mig_instances:
        profile = mig.profile or NA
        out.append(f"  MIG {profile:<11} Device {_id(mig.index):>2}: (UUID: {mig.uuid or NA})")
    return out


__all__ = ["FULL_MODES", "SHORT_MODES", "TableMig", "TableRow", "list_line", "listing_order",
           "render", "stamp"]
