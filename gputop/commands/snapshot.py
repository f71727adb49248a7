"""`gputop snapshot`: print the node once, as compact text or one `gputop/1` JSON document."""

from __future__ import annotations

import argparse
import json
import sys

from gputop.model import Snapshot, snapshot_to_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one gputop/1 JSON document")
    parser.add_argument("--window", type=float, default=0.0, metavar="SEC",
                        help="sample for SEC seconds first, so that history-based hints are present")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the text view (default: auto; NO_COLOR is honoured)")


def run(args: argparse.Namespace) -> int:
    from gputop.errors import UsageError

    if args.window < 0:
        raise UsageError(f"--window must not be negative: {args.window}")
    snap, fallback_reason, jobs = take_snapshot(args, window=args.window)
    # Only the simulator needs the warning: NVML missing on an Ascend node is the normal case.
    if fallback_reason and not args.json and snap.backend == "sim":
        print(f"gputop: no accelerator found ({fallback_reason}); showing the simulator",
              file=sys.stderr)
    if args.json:
        doc = snapshot_to_json(snap)
        doc["jobs"] = jobs
        json.dump(doc, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        from gputop.textview import render_text, use_color

        sys.stdout.write(render_text(snap, color=use_color(args.color, sys.stdout)))
    sys.stdout.flush()
    return 0


def take_snapshot(args: argparse.Namespace,
                  window: float = 0.0) -> tuple[Snapshot, str | None, list[dict]]:
    """Open the chosen backend, sample (over ``window`` seconds of its clock) and close it.

    Also returns why auto-detection passed over the real backends, if it did, and each job's
    energy over the window (``analysis.jobs.job_energy``)."""
    from gputop.analysis.jobs import job_energy
    from gputop.analysis.pipeline import default_analyzer
    from gputop.backends import open_backend
    from gputop.cli import backend_options
    from gputop.sampler import Sampler
    from gputop.selection import select_devices

    backend = open_backend(args.backend, backend_options(args))
    try:
        devices = select_devices(args.ids, backend.info().devices)
        sampler = Sampler(backend, interval=args.interval, devices=devices, analyze=default_analyzer())
        snap = sampler.run_for(window) if window > 0 else sampler.tick()
        if snap is None:
            raise sampler.last_error or RuntimeError("no sample")
        return snap, backend.fallback_reason, job_energy(sampler.history.snapshots())
    finally:
        backend.close()
