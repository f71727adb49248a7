"""The command line's shared parts: which command line is nvidia-smi's query mode, the one-line
parser, the options every command takes, the argparse type of a bounded number, and the
`SourceConfig` those options become.

argparse stops here: every command turns its namespace into a frozen config object
(`gputop.config`) before handing anything down.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import NoReturn

from gputop.config.options import DEFAULT_INTERVAL_S, SIM_STATE_ENV, SourceConfig
from gputop.core import bounds

QUERY_FLAGS = (  # any of these on a command line means query mode
    "--query-gpu",
    "--query-compute-apps",
    "--query-accounted-apps",
    "--help-query-gpu",
    "--help-query-compute-apps",
)


def is_query(argv: Sequence[str]) -> bool:
    """Whether ``argv`` asks for query mode (`--query-gpu=…`, `--help-query-gpu`, …)."""
    return any(a == f or a.startswith(f + "=") for a in argv for f in QUERY_FLAGS)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but bad input gets one line naming what was wrong, not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def bounded(bound: bounds.Bound) -> Callable[[str], float | int]:
    """An argparse ``type=`` checking against ``bound``: argparse prefixes the option's name to
    the message."""
    def convert(text: str) -> float | int:
        try:
            return bound.convert(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def device_ids(text: str) -> str:
    """``-i/--id``: comma-separated ids, none empty and none named twice. Which device each one
    means is decided against the node's devices (`gputop.core.selection`)."""
    tokens = [t.strip() for t in text.split(",")]
    if not text.strip() or "" in tokens:
        raise argparse.ArgumentTypeError(f"expected device ids separated by commas, not {text!r}")
    seen: set[str] = set()
    for token in tokens:
        if token.lower() in seen:
            raise argparse.ArgumentTypeError(f"device {token!r} is named twice in {text!r}")
        seen.add(token.lower())
    return text


def add_common_arguments(parser: argparse.ArgumentParser, suppress: bool = False) -> None:
    """Options every command shares. ``suppress`` keeps a subparser from overriding the top level."""
    from gputop.backends import CHOICES

    def d(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    g = parser.add_argument_group("backend")
    g.add_argument("--backend", choices=CHOICES, default=d("auto"),
                   help="where readings come from (default: auto = NVML, else npu-smi, else"
                        " AMD's sysfs; the dashboard alone falls back to the simulator)")
    g.add_argument("--scenario", default=d("training"), help="simulator scenario (default: training)")
    g.add_argument("--seed", type=bounded(bounds.SEED), default=d(0),
                   help=f"simulator random seed ({bounds.SEED.describe()})")
    g.add_argument("--sim-speed", type=bounded(bounds.SIM_SPEED), default=d(1.0), metavar="N",
                   help="run the simulator's clock N times faster than real time"
                        f" ({bounds.SIM_SPEED.describe()})")
    g.add_argument("--sim-state", metavar="FILE", default=d(os.environ.get(SIM_STATE_ENV)),
                   help=f"simulator state file, so settings outlive the process (${SIM_STATE_ENV})")
    g.add_argument("--npu-smi", metavar="PATH", default=d(None), help="npu-smi executable")
    g.add_argument("--replay", metavar="FILE", default=d(None), help="CSV log for --backend replay")
    g.add_argument("--sysfs-root", metavar="DIR", default=d(None),
                   help="read AMD and Intel cards from DIR/sys/class/drm and DIR/proc "
                        "(default: /)")
    g.add_argument("--interval", type=bounded(bounds.INTERVAL), default=d(DEFAULT_INTERVAL_S),
                   metavar="SEC", help=f"seconds between samples (default: {DEFAULT_INTERVAL_S:g};"
                                       f" {bounds.INTERVAL.describe()})")
    g.add_argument("-i", "--id", dest="ids", type=device_ids, default=d(None), metavar="IDS",
                   help="devices: indices, UUIDs or PCI bus ids, comma separated")


def source_config(args: argparse.Namespace) -> SourceConfig:
    """The shared options, as every command hands them down."""
    from gputop.backends.base import BackendOptions

    return SourceConfig(
        backend=args.backend,
        options=BackendOptions(scenario=args.scenario, seed=args.seed, sim_speed=args.sim_speed,
                               sim_state=args.sim_state, npu_smi=args.npu_smi, replay=args.replay,
                               sysfs_root=args.sysfs_root),
        ids=args.ids,
        interval=args.interval,
    )
