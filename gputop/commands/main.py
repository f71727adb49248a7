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

from gputop import __version__
from gputop.config.options import OneLineParser, add_common_arguments
from gputop.core.errors import GputopError

# subcommand -> (module, one-line help). Modules are imported only when their command runs.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "snapshot": ("gputop.commands.snapshot", "print the node once (text or --json) and exit"),
    "agent": ("gputop.commands.agent", "stream snapshots as NDJSON (for the cluster view)"),
    "cluster": ("gputop.commands.cluster", "watch many nodes over SSH"),
    "advise": ("gputop.commands.advise", "power-limit advisor: slowdown versus watts saved"),
    "replay": ("gputop.commands.replay", "open a CSV log in the dashboard"),
    "exporter": ("gputop.commands.exporter", "serve metrics to Prometheus (dcgm-exporter names)"),
    "web": ("gputop.commands.web", "serve the dashboard or the cluster view to browsers"),
}

QUERY_FLAGS = (
    "--query-gpu",
    "--query-compute-apps",
    "--query-accounted-apps",
    "--help-query-gpu",
    "--help-query-compute-apps",
)


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
    parser.add_argument("--readonly", action=argparse.BooleanOptionalAction, default=None,
                        help="dashboard: no actions that change anything (no process signals,"
                             " no recording, no screenshots)")
    parser.add_argument("--record-fields", metavar="FIELDS", default=None,
                        help="dashboard: the nvidia-smi fields the r key records (default: "
                             "timestamp, identity, load, memory, power, clocks, throttling)")
    parser.add_argument("--record-dir", metavar="DIR", default=".",
                        help="dashboard: the folder the r key records to (default: this one)")
    parser.add_argument("--config", metavar="FILE", default=None,
                        help="dashboard: the settings file (default: $GPUTOP_CONFIG, else"
                             " $XDG_CONFIG_HOME/gputop/config.toml)")
    parser.add_argument("--no-config", action="store_true",
                        help="dashboard: ignore the settings file")
    # `gputop web` checks the command line it will serve with this same parser.
    parser.set_defaults(_build_parser=build_parser)
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


def _is_query_mode(argv: Sequence[str]) -> bool:
    return any(a == f or a.startswith(f + "=") for a in argv for f in QUERY_FLAGS)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if _is_query_mode(argv):
            from gputop.commands.query import main as query_main

            return query_main(argv)
        parser = build_parser()
        args = parser.parse_args(argv)
        run = getattr(args, "_run", None)
        from gputop.config.settings import with_settings  # the dashboard's defaults, from a file

        args = with_settings(parser, argv, args)
        if run is None:
            from gputop.commands.dashboard import run_dashboard

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


__all__ = ["main", "build_parser"]
