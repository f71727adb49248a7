"""`gputop snapshot`: print the node once, as compact text or one `gputop/1` JSON document."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputop.commands.common import bounded, source_config
from gputop.config.options import SourceConfig
from gputop.core import bounds, jsonout
from gputop.core.model import Snapshot, snapshot_to_json

if TYPE_CHECKING:
    from gputop.analysis.waste import WasteLedger
    from gputop.analysis.xid import XidLog


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one gputop/1 JSON document")
    parser.add_argument("--window", type=bounded(bounds.SNAPSHOT_WINDOW), default=0.0, metavar="SEC",
                        help="sample for SEC seconds first, so that history-based hints are present"
                             f" ({bounds.SNAPSHOT_WINDOW.describe()})")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the text view (default: auto; NO_COLOR is honoured)")


@dataclass(frozen=True)
class SnapshotConfig:
    source: SourceConfig
    json: bool = False
    window: float = 0.0  # seconds sampled first; 0: one sample
    color: str = "auto"  # auto, always or never


def configure(args: argparse.Namespace) -> SnapshotConfig:
    return SnapshotConfig(source=source_config(args), json=args.json, window=args.window,
                          color=args.color)


def check_window(window: float, interval: float) -> None:
    """Refuse a window that cannot do what it asks for, before any device is opened: one shorter
    than an interval takes a single sample (what ``--window 0`` does, without history-based
    hints), and with ``--window 0`` an ``--interval`` has nothing to space out."""
    from gputop.config.options import DEFAULT_INTERVAL_S
    from gputop.core.errors import UsageError

    if 0 < window < interval:
        raise UsageError(f"snapshot --window {window:g} s is shorter than --interval {interval:g} s:"
                         " it would take one sample, as --window 0 does; give a window of at"
                         " least one interval")
    if window == 0 and interval != DEFAULT_INTERVAL_S:
        raise UsageError(f"--interval {interval:g} does nothing where snapshot takes one sample"
                         f" (--window 0, the default): add --window SEC to sample every"
                         f" {interval:g} s for SEC seconds")


def run(config: SnapshotConfig) -> int:
    from gputop.analysis.waste import WasteLedger
    from gputop.analysis.xid import XidLog
    from gputop.core.output import write_stdout

    check_window(config.window, config.source.interval)
    xids = XidLog()
    waste = WasteLedger()
    snap, jobs = take_snapshot(config.source, window=config.window, xids=xids, waste=waste)
    if config.json:
        doc = snapshot_to_json(snap)
        doc["jobs"] = jobs
        # idle-allocated time and energy per job and per user over the window (docs/waste.md)
        doc["idle"] = waste.summary()
        # what each job used of the GPUs over the window (docs/waste.md)
        doc["job_accounting"] = waste.accounts.records()
        # every Xid seen over the window, explained and tied to its GPU's processes, newest first
        doc["xid_events"] = [e.to_json() for e in xids.events()]
        write_stdout(jsonout.dumps(doc, separators=(",", ":")) + "\n")
    else:
        write_text(snap, config.color)
    return 0


def write_text(snap: Snapshot, color: str = "auto") -> None:
    """The text view of ``snap`` on standard output."""
    from gputop.core.output import write_stdout
    from gputop.tui.text.compact import render_text, use_color

    write_stdout(render_text(snap, color=use_color(color, sys.stdout)))


def print_once(source: SourceConfig) -> int:
    """What plain ``gputop`` does without a terminal: the text view once, as nvidia-smi prints
    its table and nvitop and gpustat print once when not on a terminal. The backend is the one
    asked for, never the simulator in its place: a script gets a device's figures or one line
    saying there is none."""
    snap, _ = take_snapshot(source)
    write_text(snap)
    return 0


def take_snapshot(source: SourceConfig, window: float = 0.0, xids: XidLog | None = None,
                  waste: WasteLedger | None = None) -> tuple[Snapshot, list[dict]]:
    """Open the chosen backend, sample (over ``window`` seconds of its clock) and close it.

    Also returns each job's energy over the window (``analysis.jobs.job_energy``), feeds
    every sample to ``xids``, which explains the Xids seen, and to ``waste``, which accounts
    idle-allocated time (on the processes, and in its summary)."""
    from gputop.analysis.jobs import job_energy
    from gputop.analysis.pipeline import default_analyzer
    from gputop.backends import open_backend
    from gputop.core.selection import select_devices
    from gputop.sampler import Sampler

    backend = open_backend(source.backend, source.options)
    try:
        devices = select_devices(source.ids, backend.info().devices)
        sampler = Sampler(backend, interval=source.interval, devices=devices,
                          analyze=default_analyzer(),
                          annotate=waste.annotate if waste is not None else None)
        if xids is not None:
            sampler.subscribe(xids.listen)
        snap = sampler.run_for(window) if window > 0 else sampler.tick()
        if snap is None:
            raise sampler.last_error or RuntimeError("no sample")
        for note in backend.notes():  # what was left out for lack of permission, said once
            print(f"gputop: note: {note}", file=sys.stderr, flush=True)
        return snap, job_energy(sampler.history)
    finally:
        backend.close()
