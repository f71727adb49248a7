"""`gputop replay FILE`: open a CSV log (gputop's or nvidia-smi's) in the dashboard.

The dashboard drives the replay backend's player (play/pause, step, seek, speed).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from gputop.commands import dashboard
from gputop.commands.common import bounded
from gputop.config.dashboard import DashboardConfig
from gputop.core.bounds import REPLAY_SPEED
from gputop.core.errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="CSV log with a header (--format=csv)")
    parser.add_argument("--speed", type=bounded(REPLAY_SPEED), default=1.0, metavar="X",
                        help="start playing at X times the recorded speed (default: 1;"
                             f" {REPLAY_SPEED.describe()})")


def configure(args: argparse.Namespace, config: DashboardConfig) -> DashboardConfig:
    """The dashboard's ``config`` on the replay backend, reading ``FILE`` from its start at
    ``--speed`` (the replay backend's initial playback speed)."""
    source = config.source
    options = replace(source.options, replay=args.file, sim_speed=args.speed)
    return replace(config, source=replace(source, backend="replay", options=options))


def run(config: DashboardConfig) -> int:
    # Read the log once before the dashboard starts, so that a malformed line is a clear error
    # on the terminal rather than inside a full-screen app.
    from gputop.backends import open_backend

    open_backend("replay", config.source.options).close()
    if not dashboard.has_terminal():
        dashboard.checked(config)
        raise UsageError("replay opens the dashboard, which needs a terminal (standard input and "
                         "output a TTY)")
    return dashboard.run_dashboard(config)
