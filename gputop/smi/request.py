"""nvidia-smi's command line, for the forms the personality answers, as a frozen request.

nvidia-smi takes `-d X`, `-d=X` and `--display=X` alike, and says what is wrong in its own words
on standard output with its own exit codes; :class:`SmiRefusal` carries those words and codes
(taken from a real driver 580.159.04, captures/…/errors) to the command, which prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gputop.core import bounds

HELP_HINT = "Please run 'nvidia-smi -h' for help."
# -d's display types (driver 580's `nvidia-smi -h`) and the -q sections each one keeps: text
# labels and XML tags of the GPU block's top level. PERFORMANCE, CLOCK, ECC and
# PAGE_RETIREMENT are checked against real `-q -d` captures; the rest follow their names.
DISPLAY: dict[str, tuple[str, ...]] = {
    "MEMORY": ("FB Memory Usage", "BAR1 Memory Usage", "Conf Compute Protected Memory Usage"),
    "UTILIZATION": ("Utilization",),
    "ECC": ("ECC Mode", "ECC Errors"),
    "TEMPERATURE": ("Temperature",),
    "POWER": ("GPU Power Readings", "GPU Memory Power Readings", "Module Power Readings",
              "Power Readings"),
    "CLOCK": ("Clocks", "Applications Clocks", "Default Applications Clocks", "Deferred Clocks",
              "Max Clocks", "Max Customer Boost Clocks", "Clock Policy"),
    "COMPUTE": ("Compute Mode",),
    "PIDS": ("Processes",),
    "PERFORMANCE": ("Performance State", "Clocks Event Reasons", "Clocks Throttle Reasons",
                    "Clocks Event Reasons Counters", "Sparse Operation Mode"),
    "SUPPORTED_CLOCKS": ("Supported Clocks",),
    "PAGE_RETIREMENT": ("Retired Pages",),
    "ACCOUNTING": ("Accounting Mode", "Accounting Mode Buffer Size", "Accounted Processes"),
    "ENCODER_STATS": ("Encoder Stats",),
    "SUPPORTED_GPU_TARGET_TEMP": ("Supported GPU Target Temp",),
    "VOLTAGE": ("Voltage",),
    "FBC_STATS": ("FBC Stats",),
    "ROW_REMAPPER": ("Remapped Rows",),
    "GSP_FIRMWARE_VERSION": ("GSP Firmware Version",),
    "POWER_SMOOTHING": ("Power Smoothing",),
    "POWER_PROFILES": ("Workload Power Profiles",),
}
# Options that change a GPU's settings: nvidia-smi's, which the personality never does.
SETTERS = frozenset({
    "-pm", "--persistence-mode", "-e", "--ecc-config", "-p", "--reset-ecc-errors", "-c",
    "--compute-mode", "--gom", "-r", "--gpu-reset", "-vm", "--virt-mode", "-lgc",
    "--lock-gpu-clocks", "-rgc", "--reset-gpu-clocks", "-lmc", "--lock-memory-clocks", "-rmc",
    "--reset-memory-clocks", "-ac", "--applications-clocks", "-rac",
    "--reset-applications-clocks", "-pl", "--power-limit", "-cc", "--cuda-clocks", "-am",
    "--accounting-mode", "-caa", "--clear-accounted-apps", "--auto-boost-default",
    "--auto-boost-permission", "-mig", "--multi-instance-gpu", "-gtt", "--gpu-target-temp",
    "-den", "--dram-encryption", "--set-hostname", "-t", "--toggle-led",
})
# nvidia-smi's subcommands (`nvidia-smi dmon`, …), which the personality does not answer.
SUBCOMMANDS = frozenset({
    "dmon", "daemon", "replay", "pmon", "topo", "drain", "nvlink", "c2c", "clocks",
    "encodersessions", "fbcsessions", "vgpu", "mig", "compute-policy", "boost-slider",
    "power-hint", "base-clocks", "conf-compute", "gpm", "pci", "power-smoothing",
    "power-profiles",
})


class SmiRefusal(Exception):
    """What nvidia-smi would say (on standard output) and the exit code it would give."""

    def __init__(self, text: str, exit_code: int) -> None:
        super().__init__(text)
        self.text = text
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True)
class SmiRequest:
    """One nvidia-smi invocation, checked: which face, of which devices, how often, where."""

    face: str  # "table" | "list" | "q" | "qx" | "version" | "help"
    ids: str | None = None  # -i, as given
    display: tuple[str, ...] = ()  # -d types, upper case, in the order given
    interval: float | None = None  # seconds between reports; None: once
    filename: str | None = None


_VALUED = {"-i": "id", "--id": "id", "-d": "display", "--display": "display", "-f": "filename",
           "--filename": "filename", "-l": "loop", "--loop": "loop", "-lms": "loop_ms",
           "--loop-ms": "loop_ms"}
_FLAGS = {"-q": "query", "--query": "query", "-x": "xml", "--xml-format": "xml",
          "-L": "list", "--list-gpus": "list", "-h": "help", "--help": "help",
          "--version": "version"}
_OPTIONAL = {"loop"}  # a bare -l probes every 5 s


def _unrecognized(option: str) -> SmiRefusal:
    return SmiRefusal(f"ERROR: Option {option} is not recognized. Please run 'nvidia-smi -h'.\n\n",
                      255)


def parse(argv: Sequence[str]) -> SmiRequest:
    """The request ``argv`` makes; raises SmiRefusal with nvidia-smi's words where it would."""
    seen: dict[str, str | None] = {}
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=")
        if arg in SUBCOMMANDS:
            raise SmiRefusal(f"gputop's nvidia-smi answers the table, -L, -q, -q -x and the "
                             f"--query forms; `nvidia-smi {arg}` is not one of them\n", 3)
        if name in SETTERS:
            raise SmiRefusal(f"gputop's nvidia-smi reads and never changes a GPU: {name} is not"
                             " available\n", 3)
        if name in _VALUED:
            key = _VALUED[name]
            if eq:
                seen[key] = inline
            elif i + 1 < len(args) and not (args[i + 1].startswith("-") and key in _OPTIONAL):
                i += 1
                seen[key] = args[i]
            elif key in _OPTIONAL:
                seen[key] = None
            else:
                raise SmiRefusal(f"ERROR: Option {name} requires an argument. {HELP_HINT}\n\n", 2)
        elif arg in _FLAGS:
            seen[_FLAGS[arg]] = ""
        else:
            raise _unrecognized(arg)
        i += 1
    return _request(seen)


def _interval(seen: dict[str, str | None]) -> float | None:
    if "loop" in seen and "loop_ms" in seen:
        raise SmiRefusal(f"Invalid combination of input arguments. {HELP_HINT}\n\n", 2)
    try:
        if "loop" in seen:
            return float(bounds.LOOP_S.convert(seen["loop"] or "5"))
        if "loop_ms" in seen:
            return bounds.LOOP_MS.convert(seen["loop_ms"] or "") / 1000.0
    except ValueError as exc:
        raise SmiRefusal(f"Invalid loop interval: {exc}. {HELP_HINT}\n\n", 2) from None
    return None


def _request(seen: dict[str, str | None]) -> SmiRequest:
    if "help" in seen:
        return SmiRequest("help")
    if "version" in seen:
        return SmiRequest("version")
    interval = _interval(seen)
    ids, filename = seen.get("id"), seen.get("filename")
    if "list" in seen:
        if "id" in seen:
            raise SmiRefusal(f"ERROR: Option -i is not valid for this command. {HELP_HINT}\n\n", 2)
        return SmiRequest("list", interval=interval, filename=filename)
    if "xml" in seen and "query" not in seen:
        raise SmiRefusal("Invalid combination of input arguments. Specify -q/--query and "
                         f"-x/--xml-format to run an XML query.  {HELP_HINT}\n\n", 2)
    display: tuple[str, ...] = ()
    if "display" in seen:
        if "query" not in seen or "xml" in seen:  # -d reads -q text only (nvidia-smi -h)
            raise SmiRefusal(f"Invalid combination of input arguments. {HELP_HINT}\n\n", 2)
        display = tuple(t.strip().upper() for t in (seen["display"] or "").split(","))
        if not display or any(t not in DISPLAY for t in display):
            raise SmiRefusal("Failed to parse --display/-d flags\n", 2)
    face = ("qx" if "xml" in seen else "q") if "query" in seen else "table"
    return SmiRequest(face, ids=ids, display=display, interval=interval, filename=filename)


__all__ = ["DISPLAY", "SmiRefusal", "SmiRequest", "parse"]
