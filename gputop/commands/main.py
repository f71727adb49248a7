"""Command line entry point: `gputop [options] [snapshot|agent|cluster|advise|replay|exporter|web|alerts|watch|report]`.

With no subcommand it opens the dashboard, or, with no terminal to open it on, prints the text
view once. nvidia-smi's query flags (`--query-gpu=…`) switch to
the nvidia-smi compatible query mode, which has its own parser because its flags are nvidia-smi's.
Each command turns the parsed namespace into its frozen config object and runs on that.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NoReturn

from gputop import __version__
from gputop.commands import dashboard
from gputop.commands.common import (
    OneLineParser,
    add_common_arguments,
    bounded,
    is_query,
    source_config,
)
from gputop.core import bounds
from gputop.core.errors import GputopError, UsageError

# subcommand -> one-line help. Each has its module here, gputop.commands.<name>, with
# ``add_arguments(parser)``, ``configure`` and ``run``; a module is imported only when its
# command is named (CommandParser), so the dashboard loads none of them.
SUBCOMMANDS = {
    "snapshot": "print the node once (text or --json) and exit",
    "agent": "stream snapshots as NDJSON (for the cluster view)",
    "cluster": "watch many nodes over SSH",
    "advise": "power-limit advisor: slowdown versus watts saved",
    "replay": "open a CSV log in the dashboard",
    "exporter": "serve metrics to Prometheus (dcgm-exporter names)",
    "web": "serve the dashboard or the cluster view to browsers",
    "alerts": "list the alert rules in force (--list)",
    "watch": "evaluate the alert rules with no screen and notify (for systemd)",
    "report": "GPU-hours, idle GPU-hours and energy per job and user, from recordings or"
              " Prometheus",
}


def command_module(name: str) -> Any:
    """The module of the subcommand ``name`` (``gputop.commands.<name>``), imported now."""
    return importlib.import_module(f"gputop.commands.{name}")


class CommandParser(OneLineParser):
    """A subcommand's parser whose own options are added, and its module imported, only when
    it is first used: when the command line names the command, or its help is asked for."""

    def __init__(self, *args: Any, command: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._command: str | None = command

    def _complete(self) -> None:
        if self._command is not None:
            command, self._command = self._command, None
            command_module(command).add_arguments(self)

    def parse_known_args(self, args=None, namespace=None):
        self._complete()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._complete()
        return super().format_usage()

    def format_help(self) -> str:
        self._complete()
        return super().format_help()

SMI = "nvidia-smi"  # the personality's command word, and the name of a link that means it


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="gputop",
        description="A terminal dashboard for multi-GPU nodes. Without a command, opens the dashboard.",
        epilog="nvidia-smi query mode: gputop --query-gpu=FIELDS --format=csv [-l SEC] [-f FILE]"
               " (see gputop --help-query-gpu). nvidia-smi's other faces: gputop nvidia-smi"
               " [-L | -q [-x] [-d TYPES]] [-i IDS] [-l SEC] (see gputop nvidia-smi -h), or"
               " gputop run through a link named nvidia-smi.",
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
    parser.add_argument("--history", metavar="SEC", type=bounded(bounds.HISTORY), default=None,
                        help="dashboard: how far back the plots and the process view reach"
                             f" (default: {bounds.HISTORY_DEFAULT_S:g}; {bounds.HISTORY.describe()}); the memory"
                             " is the same at any span, older points are sparser")
    parser.add_argument("--config", metavar="FILE", default=None,
                        help="dashboard, exporter --alert-rules: the settings file (default:"
                             " $GPUTOP_CONFIG, else"
                             " $XDG_CONFIG_HOME/gputop/config.toml)")
    parser.add_argument("--no-config", action="store_true",
                        help="dashboard, exporter --alert-rules: ignore the settings file")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    for name, help_text in SUBCOMMANDS.items():
        sub = subs.add_parser(name, help=help_text, description=help_text, command=name)
        add_common_arguments(sub, suppress=True)
    return parser


def _smi_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog=f"gputop {SMI}", add_help=False)
    add_common_arguments(parser)
    return parser


def _personality(argv: list[str], program: str) -> tuple[list[str], list[str]] | None:
    """(gputop's options, nvidia-smi's arguments) when the command line asks for the
    personality: gputop run as `nvidia-smi`, or `gputop [backend options] nvidia-smi …` (the
    word after gputop's own options only: `gputop replay nvidia-smi` replays a file)."""
    if os.path.basename(program) == SMI:
        return [], argv
    if SMI not in argv:
        return None
    at = argv.index(SMI)

    class Probe(argparse.ArgumentParser):  # says "not options only" instead of exiting
        def error(self, message: str) -> NoReturn:
            raise ValueError(message)

    probe = Probe(add_help=False)
    add_common_arguments(probe)
    try:
        _, rest = probe.parse_known_args(argv[:at])
    except ValueError:  # `--replay nvidia-smi`: the word is a value here
        return None
    return None if rest else (argv[:at], argv[at + 1:])


def _run_personality(mine: list[str], theirs: list[str]) -> int:
    from gputop.commands import nvidia_smi

    return nvidia_smi.main(theirs, source_config(_smi_parser().parse_args(mine)), mine)


def prepare_command(parser: argparse.ArgumentParser, argv: list[str],
                    args: argparse.Namespace) -> Callable[[], int]:
    """Turn the parsed command line into the chosen command's config; return the command, to
    be run once the parser is gone (`command`).

    Only the dashboard (``gputop``, ``gputop replay``) reads the settings file, and ``gputop
    alerts``, ``gputop watch``, the cluster view and ``gputop exporter --alert-rules`` its
    rules; the other commands feed scripts, and a ``--config`` given to one of them is
    refused."""
    if args.command in (None, "replay"):
        config = dashboard.configure(parser, argv, args)  # the settings file under the options
        if args.command == "replay":
            from gputop.commands import replay

            return partial(replay.run, replay.configure(args, config))
        if not dashboard.has_terminal():  # a script, a pipe, cron, setsid: the text view once
            dashboard.checked(config)  # a bad option is said even here
            dashboard.check_theme(config)
            from gputop.commands import snapshot

            return partial(snapshot.print_once, config.source)
        return partial(dashboard.run_dashboard, config)
    if args.command == "alerts":
        from gputop.commands import alerts

        return partial(alerts.run, alerts.configure(args))
    if args.command == "watch":
        from gputop.commands import watch

        return partial(watch.run, watch.configure(args))
    if args.command == "cluster":  # its live view evaluates the file's alert rules
        from gputop.commands import cluster

        return partial(cluster.run, cluster.configure(args))
    alert_rules = args.command == "exporter" and args.alert_rules is not None  # reads its rules
    if args.config is not None and not alert_rules:  # asked for, and it would do nothing: say so
        raise UsageError(f"--config: only the dashboard reads a settings file, not "
                         f"`gputop {args.command}`")
    # each command's module imported here, when it runs, not by the dashboard
    if args.command == "snapshot":
        from gputop.commands import snapshot

        return partial(snapshot.run, snapshot.configure(args))
    if args.command == "agent":
        from gputop.commands import agent

        return partial(agent.run, agent.configure(args))
    if args.command == "advise":
        from gputop.commands import advise

        return partial(advise.run, advise.configure(args))
    if args.command == "exporter":
        from gputop.commands import exporter

        return partial(exporter.run, exporter.configure(args))
    if args.command == "report":
        from gputop.commands import report

        return partial(report.run, report.configure(args))
    from gputop.commands import web

    # `gputop web` checks the command line it will serve with this same parser.
    return partial(web.run, web.configure(args, build_parser))


def command(argv: list[str]) -> Callable[[], int]:
    """Parse ``argv`` and return its command, configured, to run. The parser (a quarter of a MB
    of help and actions) is let go here: a dashboard, an agent or an exporter runs for weeks
    without it (#26)."""
    parser = build_parser()
    return prepare_command(parser, argv, parser.parse_args(argv))


def main(argv: Sequence[str] | None = None, program: str | None = None) -> int:
    program = sys.argv[0] if program is None else program
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if (split := _personality(argv, program)) is not None:
            return _run_personality(*split)
        if is_query(argv):
            from gputop.commands import query  # the dashboard does not load query mode

            return query.main(argv)
        return command(argv)()
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


def run_main() -> NoReturn:
    """Run gputop as a program: the console script and ``python -m gputop``."""
    from gputop.core.lifeline import exit_process

    exit_process(main())


__all__ = ["main", "build_parser", "command", "prepare_command", "run_main"]
