"""Command line entry point: `gputop [options] [snapshot|agent|cluster|advise|replay]`.

With no subcommand it opens the dashboard. nvidia-smi's query flags (`--query-gpu=…`) switch to
the nvidia-smi compatible query mode, which has its own parser because its flags are nvidia-smi's.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from gputop import __version__
from gputop.errors import GputopError, UsageError

# subcommand -> (module, one-line help). Modules are imported only when their command runs.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "snapshot": ("gputop.commands.snapshot", "print the node once (text or --json) and exit"),
    "agent": ("gputop.commands.agent", "stream snapshots as NDJSON (for the cluster view)"),
    "cluster": ("gputop.commands.cluster", "watch many nodes over SSH"),
    "advise": ("gputop.commands.advise", "power-limit advisor: slowdown versus watts saved"),
    "replay": ("gputop.commands.replay", "open a CSV log in the dashboard"),
    "exporter": ("gputop.commands.exporter", "serve metrics to Prometheus (dcgm-exporter names)"),
}

QUERY_FLAGS = (
    "--query-gpu",
    "--query-compute-apps",
    "--query-accounted-apps",
    "--help-query-gpu",
    "--help-query-compute-apps",
)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but bad input gets one line naming what was wrong, not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def add_common_arguments(parser: argparse.ArgumentParser, suppress: bool = False) -> None:
    """Options every command shares. ``suppress`` keeps a subparser from overriding the top level."""
    from gputop.backends import CHOICES

    def d(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    g = parser.add_argument_group("backend")
    g.add_argument("--backend", choices=CHOICES, default=d("auto"),
                   help="where readings come from (default: auto = NVML, else npu-smi, else simulator)")
    g.add_argument("--scenario", default=d("training"), help="simulator scenario (default: training)")
    g.add_argument("--seed", type=int, default=d(0), help="simulator random seed")
    g.add_argument("--sim-speed", type=_positive_float, default=d(1.0), metavar="N",
                   help="run the simulator's clock N times faster than real time")
    g.add_argument("--sim-state", metavar="FILE", default=d(os.environ.get("GPUTOP_SIM_STATE")),
                   help="simulator state file, so settings outlive the process ($GPUTOP_SIM_STATE)")
    g.add_argument("--npu-smi", metavar="PATH", default=d(None), help="npu-smi executable")
    g.add_argument("--replay", metavar="FILE", default=d(None), help="CSV log for --backend replay")
    g.add_argument("--interval", type=_positive_float, default=d(1.0), metavar="SEC",
                   help="seconds between samples (default: 1)")
    g.add_argument("-i", "--id", dest="ids", default=d(None), metavar="IDS",
                   help="devices: indices, UUIDs or PCI bus ids, comma separated")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="gputop",
        description="A terminal dashboard for multi-GPU nodes. Without a command, opens the dashboard.",
        epilog="nvidia-smi query mode: gputop --query-gpu=FIELDS --format=csv [-l SEC] [-f FILE]"
               " (see gputop --help-query-gpu).",
    )
    parser.add_argument("--version", action="version", version=f"gputop {__version__}")
    add_common_arguments(parser)
    parser.add_argument("--theme", default=None, help="dashboard theme (see themes/)")
    parser.add_argument("--readonly", action="store_true",
                        help="dashboard: no actions that change anything (no process signals)")
    parser.add_argument("--record-fields", metavar="FIELDS", default=None,
                        help="dashboard: the nvidia-smi fields the r key records (default: "
                             "timestamp, identity, load, memory, power, clocks, throttling)")
    parser.add_argument("--record-dir", metavar="DIR", default=".",
                        help="dashboard: the folder the r key records to (default: this one)")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub = subs.add_parser(name, help=help_text, description=help_text)
        add_common_arguments(sub, suppress=True)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue  # a command not built yet: hidden rather than broken
        module.add_arguments(sub)
        sub.set_defaults(_run=module.run)
    return parser


def backend_options(args: argparse.Namespace):
    from gputop.backends.base import BackendOptions

    return BackendOptions(
        scenario=args.scenario,
        seed=args.seed,
        sim_speed=args.sim_speed,
        sim_state=args.sim_state,
        npu_smi=args.npu_smi,
        replay=args.replay,
    )


def _is_query_mode(argv: Sequence[str]) -> bool:
    return any(a == f or a.startswith(f + "=") for a in argv for f in QUERY_FLAGS)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if _is_query_mode(argv):
            from gputop.query.cli import main as query_main

            return query_main(argv)
        args = build_parser().parse_args(argv)
        run = getattr(args, "_run", None)
        if run is None:
            from gputop.tui.app import run_dashboard

            return run_dashboard(args)
        return run(args)
    except GputopError as exc:
        print(f"gputop: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`gputop snapshot | head`): not an error worth a traceback.
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return 0


__all__ = ["main", "build_parser", "add_common_arguments", "backend_options", "UsageError"]
