"""`gputop replay FILE`: open a CSV log (gputop's or nvidia-smi's) in the dashboard.

The dashboard drives the replay backend's player (play/pause, step, seek, speed).
"""

from __future__ import annotations

import argparse

from gputop.core.bounds import REPLAY_SPEED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="CSV log with a header (--format=csv)")
    parser.add_argument("--speed", type=REPLAY_SPEED.arg_type, default=1.0, metavar="X",
                        help="start playing at X times the recorded speed (default: 1;"
                             f" {REPLAY_SPEED.describe()})")


def run(args: argparse.Namespace) -> int:
    args.backend = "replay"
    args.replay = args.file
    args.sim_speed = args.speed  # the replay backend's initial playback speed
    # Read the log once before the dashboard starts, so that a malformed line is a clear error
    # on the terminal rather than inside a full-screen app.
    from gputop.backends import open_backend
    from gputop.config.options import backend_options

    open_backend("replay", backend_options(args)).close()
    from gputop.commands.dashboard import run_dashboard

    return run_dashboard(args)
