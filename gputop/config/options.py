"""Options every command shares, parsed and checked in one place below the entry point.

The entry point (`gputop.commands.main`), query mode and every command import what they share from here;
nothing imports the entry point. Numbers are checked against `gputop.core.bounds` as they are parsed,
so a bad value is one line and exit 2 before any device is opened.
"""

from __future__ import annotations

import argparse
import os
from typing import NoReturn

from gputop.core import bounds

SIM_STATE_ENV = "GPUTOP_SIM_STATE"
DEFAULT_INTERVAL_S = 1.0  # seconds between samples where --interval is not given


class OneLineParser(argparse.ArgumentParser):
    """argparse, but bad input gets one line naming what was wrong, not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


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


def parse_listen(text: str) -> tuple[str, int]:
    """``--listen``: ``:9400``, ``127.0.0.1:9400``, ``[::1]:9400`` → (host, port); host "" is
    every address. The port is checked against `gputop.core.bounds`."""
    from gputop.core.errors import UsageError

    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    wanted = UsageError(f"--listen: expected ADDR:PORT, :PORT or [IPV6]:PORT with a port from "
                        f"{bounds.LISTEN_PORT.describe()}, not {text!r}")
    if not sep or ":" in host and not text.startswith("["):
        raise wanted
    try:
        return host, int(bounds.LISTEN_PORT.convert(port))
    except ValueError:
        raise wanted from None


def add_common_arguments(parser: argparse.ArgumentParser, suppress: bool = False) -> None:
    """Options every command shares. ``suppress`` keeps a subparser from overriding the top level."""
    from gputop.backends import CHOICES

    def d(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    g = parser.add_argument_group("backend")
    g.add_argument("--backend", choices=CHOICES, default=d("auto"),
                   help="where readings come from (default: auto = NVML, else npu-smi; the"
                        " dashboard alone falls back to the simulator)")
    g.add_argument("--scenario", default=d("training"), help="simulator scenario (default: training)")
    g.add_argument("--seed", type=bounds.SEED.arg_type, default=d(0),
                   help=f"simulator random seed ({bounds.SEED.describe()})")
    g.add_argument("--sim-speed", type=bounds.SIM_SPEED.arg_type, default=d(1.0), metavar="N",
                   help="run the simulator's clock N times faster than real time"
                        f" ({bounds.SIM_SPEED.describe()})")
    g.add_argument("--sim-state", metavar="FILE", default=d(os.environ.get(SIM_STATE_ENV)),
                   help=f"simulator state file, so settings outlive the process (${SIM_STATE_ENV})")
    g.add_argument("--npu-smi", metavar="PATH", default=d(None), help="npu-smi executable")
    g.add_argument("--replay", metavar="FILE", default=d(None), help="CSV log for --backend replay")
    g.add_argument("--interval", type=bounds.INTERVAL.arg_type, default=d(DEFAULT_INTERVAL_S),
                   metavar="SEC", help=f"seconds between samples (default: {DEFAULT_INTERVAL_S:g};"
                                       f" {bounds.INTERVAL.describe()})")
    g.add_argument("-i", "--id", dest="ids", type=device_ids, default=d(None), metavar="IDS",
                   help="devices: indices, UUIDs or PCI bus ids, comma separated")


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
