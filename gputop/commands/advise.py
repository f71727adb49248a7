"""`gputop advise`: what a lower power limit would cost, measured on the running job.

Without options it is passive (reads power for --window seconds and changes nothing). --sweep
measures the curve by stepping the limit down; --run "CMD" times the user's own command at each
limit. Either way the original limits are journaled first and put back at the end, on error,
on Ctrl-C, SIGTERM and SIGHUP; --restore puts back what a killed run left behind.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gputop.commands.common import bounded, source_config
from gputop.config.options import SourceConfig
from gputop.core import bounds

if TYPE_CHECKING:
    from gputop.advisor.benchmark import Benchmark
    from gputop.advisor.sweep import Sweep

DEFAULT_WINDOW_S = 30.0
DEFAULT_SETTLE_S = 10.0
DEFAULT_MEASURE_S = 20.0
# The advisor's own options that default to None on the command line, so that one given where
# it does nothing is told apart from one left out; their values where they were left out.
_DEFAULTS = {"window": DEFAULT_WINDOW_S, "settle": DEFAULT_SETTLE_S,
             "measure": DEFAULT_MEASURE_S, "max_slowdown": 5.0, "eta": 0.5, "repeat": 1}

# What each mode is called in a refusal, and how a user asks for it.
_WHERE = {"passive": "without --sweep or --run (the passive view changes no limit)",
          "sweep": "with --sweep", "benchmark": "with --run",
          "restore": "with --restore (it puts back every limit its journals hold)"}
_ASKED_BY = {"passive": "the passive view", "sweep": "--sweep", "benchmark": "--run"}
_FLAG = {"sweep": "--sweep", "benchmark": "--run", "restore": "--restore"}
_MEASURING = ("sweep", "benchmark")
# option dest -> (how it is written, the modes it acts in). --window also acts in a sweep: the
# passive view is shown where the sweep cannot change limits. --json and --no-plot are always
# honoured (there is no plot to leave out in the passive view or in JSON).
_ACTS_IN = {
    "window": ("--window", ("passive", *_MEASURING)),
    "step": ("--step", _MEASURING),
    "settle": ("--settle", _MEASURING),
    "max_slowdown": ("--max-slowdown", _MEASURING),
    "eta": ("--eta", _MEASURING),
    "lowest": ("--lowest", _MEASURING),
    "dry_run": ("--dry-run", _MEASURING),
    "measure": ("--measure", ("sweep",)),
    "repeat": ("--repeat", ("benchmark",)),
    "ids": ("-i/--id", ("passive", *_MEASURING)),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("advisor")
    g.add_argument("--window", type=bounded(bounds.ADVISE_WINDOW), metavar="SEC",
                   help=f"passive view: seconds of power readings (default {DEFAULT_WINDOW_S:g})")
    g.add_argument("--sweep", action="store_true",
                   help="measure the curve: step the power limit down and back (changes limits)")
    g.add_argument("--run", metavar="CMD", default=None,
                   help="benchmark mode: run CMD (no shell) once per limit; slowdown from wall time")
    g.add_argument("--step", type=bounded(bounds.ADVISE_STEP), default=None, metavar="W",
                   help="watts between candidate limits (default: 25 W or 5%% of the default"
                        " limit, whichever is larger)")
    g.add_argument("--settle", type=bounded(bounds.ADVISE_SETTLE), metavar="SEC",
                   help=f"seconds to wait after each change (default {DEFAULT_SETTLE_S:g})")
    g.add_argument("--measure", type=bounded(bounds.ADVISE_MEASURE), metavar="SEC",
                   help=f"--sweep: seconds measured at each limit (default {DEFAULT_MEASURE_S:g})")
    g.add_argument("--max-slowdown", type=bounded(bounds.ADVISE_MAX_SLOWDOWN), metavar="PCT",
                   help="stop going lower once the slowdown passes PCT %% (default "
                        f"{_DEFAULTS['max_slowdown']:g})")
    g.add_argument("--eta", type=bounded(bounds.ADVISE_ETA), metavar="ETA",
                   help="weight of energy against time in the Zeus cost (0..1, default "
                        f"{_DEFAULTS['eta']:g})")
    g.add_argument("--lowest", type=bounded(bounds.ADVISE_LOWEST), default=None, metavar="W",
                   help="never set a limit below W (default: the device's minimum)")
    g.add_argument("--repeat", type=bounded(bounds.ADVISE_REPEAT), metavar="N",
                   help=f"--run: runs of the command per limit (default {_DEFAULTS['repeat']})")
    g.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    g.add_argument("--restore", action="store_true",
                   help="restore the limits a killed advisor run left changed, and exit")
    g.add_argument("--json", action="store_true", help="print one JSON document (for scripts)")
    g.add_argument("--no-plot", action="store_true", help="text output without the curve")


def _say(text: str) -> None:
    """Write to stderr; a terminal that went away (SSH dropped) must not abort a restore."""
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class _ProgressPrinter:
    """A bar that redraws in place on a terminal, one line per phase elsewhere (logs, tests)."""

    def __init__(self) -> None:
        try:
            self.tty = sys.stderr.isatty()
        except (OSError, ValueError):
            self.tty = False
        self.last = ""

    def __call__(self, p: Any) -> None:
        try:
            if self.tty:
                width = 24
                fill = round(width * p.fraction)
                sys.stderr.write(f"\r\x1b[2K[{'#' * fill}{'-' * (width - fill)}]"
                                 f" {100 * p.fraction:3.0f}% {p.message}")
                if p.phase == "done":
                    sys.stderr.write("\r\x1b[2K")
                sys.stderr.flush()
            elif p.message != self.last:
                sys.stderr.write(f"gputop advise: {p.message}\n")
                sys.stderr.flush()
            self.last = p.message
        except (OSError, ValueError):
            pass

    def clear(self) -> None:
        if self.tty:
            try:
                sys.stderr.write("\r\x1b[2K")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass


@dataclass(frozen=True)
class AdviseConfig:
    """What `gputop advise` was asked for, checked, with the defaults of what was left out."""

    source: SourceConfig
    mode: str = "passive"  # passive, sweep, benchmark (--run) or restore
    run: str | None = None  # --run CMD, split without a shell
    dry_run: bool = False
    json: bool = False
    no_plot: bool = False
    window: float = DEFAULT_WINDOW_S
    step: float | None = None  # None: 25 W or 5 % of the default limit
    settle: float = DEFAULT_SETTLE_S
    measure: float = DEFAULT_MEASURE_S
    max_slowdown: float = 5.0
    eta: float = 0.5
    lowest: float | None = None  # None: the device's minimum
    repeat: int = 1

    @property
    def restore(self) -> bool:
        return self.mode == "restore"

    @property
    def sweep(self) -> bool:
        return self.mode == "sweep"


def configure(args: argparse.Namespace) -> AdviseConfig:
    """The advisor's config, checked (see ``_validate``), with the defaults of ``_DEFAULTS``."""
    mode = _validate(args)

    def given_or_default(value, dest: str):
        return _DEFAULTS[dest] if value is None else value

    return AdviseConfig(
        source=source_config(args), mode=mode, run=args.run, dry_run=args.dry_run,
        json=args.json, no_plot=args.no_plot,
        window=given_or_default(args.window, "window"), step=args.step,
        settle=given_or_default(args.settle, "settle"),
        measure=given_or_default(args.measure, "measure"),
        max_slowdown=given_or_default(args.max_slowdown, "max_slowdown"),
        eta=given_or_default(args.eta, "eta"), lowest=args.lowest,
        repeat=given_or_default(args.repeat, "repeat"))


def _mode(args: argparse.Namespace) -> str:
    if args.restore:
        return "restore"
    if args.run is not None:
        return "benchmark"
    return "sweep" if args.sweep else "passive"


def _validate(args: argparse.Namespace) -> str:
    """Refuse, before any device is opened, settings that contradict each other: two modes at
    once, or an option given where the chosen mode does nothing with it (``--dry-run`` without a
    sweep would measure for 30 s; ``--repeat`` with --sweep would repeat nothing). Returns the
    mode."""
    from gputop.core.errors import UsageError

    if args.restore and (args.sweep or args.run or args.dry_run):
        raise UsageError("--restore cannot be combined with --sweep, --run or --dry-run")
    if args.run is not None and not args.run.strip():
        raise UsageError("--run needs a command")
    if args.sweep and args.run is not None:
        raise UsageError("--sweep and --run are two ways to measure the curve (--sweep reads the"
                         " running job's work rate, --run times CMD at each limit): give one")
    mode = _mode(args)
    given = {"window": args.window, "step": args.step, "settle": args.settle,
             "max_slowdown": args.max_slowdown, "eta": args.eta, "lowest": args.lowest,
             "dry_run": args.dry_run, "measure": args.measure, "repeat": args.repeat,
             "ids": args.ids}  # by dest, as _ACTS_IN names them: None or False is left out
    for dest, (flag, modes) in _ACTS_IN.items():
        if mode not in modes and given[dest] is not None and given[dest] is not False:  # 0 is given
            users = [_ASKED_BY[m] for m in modes]
            raise UsageError(f"{flag} does nothing {_WHERE[mode]}: it is for "
                             f"{', '.join(users[:-1])}{' and ' if users[1:] else ''}{users[-1]}")
    return mode


def run(config: AdviseConfig) -> int:
    from gputop.backends import open_backend

    argv = None
    if config.run is not None:
        import shlex

        from gputop.core.errors import UsageError

        try:
            argv = shlex.split(config.run)
        except ValueError as exc:
            raise UsageError(f"--run: cannot split the command: {exc}") from None
    backend = open_backend(config.source.backend, config.source.options)
    try:
        return _Advise(config, backend, argv).main()
    finally:
        backend.close()


class _Advise:
    def __init__(self, config: AdviseConfig, backend: Any, argv: list[str] | None) -> None:
        from gputop.core.selection import select_devices

        self.config = config
        self.backend = backend
        self.argv = argv
        info = backend.info()
        self.info = info
        self.devices = select_devices(config.source.ids, info.devices) or [d.index for d in info.devices]
        self.doc: dict[str, Any] = {
            "schema": "gputop-advise/1", "host": info.host, "backend": backend.name,
            "devices": self.devices, "mode": None, "passive": None, "sweep": None,
            "skipped": None, "restored": None, "warnings": [],
        }

    # -- output
    def _emit(self, text_lines: list[str]) -> None:
        from gputop.core import jsonout
        from gputop.core.output import write_stdout

        if self.config.json:
            write_stdout(jsonout.dumps(self.doc, separators=(",", ":")) + "\n")
        else:
            write_stdout("\n".join(text_lines) + "\n")

    def _warn(self, text: str) -> None:
        self.doc["warnings"].append(text)
        _say(f"gputop: warning: {text}")

    def _header(self) -> str:
        names = sorted({self.info.devices[i].name or "?" for i in self.devices})
        backend = "SIMULATED" if self.backend.name == "sim" else self.backend.name
        return (f"gputop advise on {self.info.host} ({backend}), GPU {','.join(map(str, self.devices))}"
                f" ({', '.join(names)})")

    # -- modes
    def main(self) -> int:
        from gputop.advisor import journal
        from gputop.advisor.safety import recording
        from gputop.core.errors import UsageError

        replayed = recording(self.backend)
        if replayed is not None and self.config.mode != "passive":
            raise UsageError(f"{replayed} ({_FLAG[self.config.mode]} needs a live GPU;"
                             " without it the recording's power is analysed)")
        if self.config.restore:
            return self.restore()
        errors: list[str] = []
        left = journal.leftovers(self.backend, errors=errors)
        measuring = self.config.sweep or self.argv is not None
        if measuring and not self.config.dry_run:
            self._refuse_stale(left, errors)
        for error in errors:
            self._warn(error)
        if left:
            self._warn(journal.leftover_warning(left))
        return self.sweep() if measuring else self.passive()

    def _refuse_stale(self, left: list[Any], errors: list[str]) -> None:
        """Refuse a sweep in one line, before anything is measured, where an earlier run may
        have left these GPUs' limits changed: the sweep would take them for the originals."""
        from gputop.core.errors import GputopError

        if errors:  # an unreadable journal may hold the originals of any GPU
            raise GputopError(f"{errors[0]}; until then a sweep could take changed limits for"
                              " the originals")
        uuids = {d.index: d.uuid for d in self.info.devices}
        ours = {uuids.get(i) for i in self.devices}
        for j in left:
            if any(e.uuid in ours for e in j.entries):
                raise GputopError(f"an earlier advisor run left power limits changed on these"
                                  f" GPUs (journal {j.path}); a sweep now would take them for"
                                  " the originals. Run `gputop advise --restore` first")

    def _passive_from(self, samples: list[Any]) -> list[str]:
        from gputop.advisor import passive, render
        from gputop.advisor.safety import recording

        gpus = passive.summarize(samples, self.devices)
        self.doc["passive"] = [render.passive_json(g) for g in gpus]
        replayed = recording(self.backend)
        if replayed is not None:  # its GPUs are not here: no command to apply anything
            return render.passive_lines(gpus, replayed, commands=False)
        return render.passive_lines(gpus, limit_commands=self.backend.limit_commands)

    def passive(self, note: list[str] | None = None) -> int:
        import threading

        from gputop.advisor.sweep import measure

        self.doc["mode"] = "passive"
        window = self.config.window
        player = self.backend.player
        if player is not None and window > player.duration - player.position:
            # a recording stops at its end: watching past it would wait forever
            window = player.duration - player.position
            note = [*(note or []), f"The recording holds {window:.0f} s from here, less than"
                                   f" --window {self.config.window:g}: watched those."]
        progress = _ProgressPrinter()
        if progress.tty:
            _say(f"measuring power for {window:g} s (passive: nothing is changed)…")
        samples = measure(self.backend, self.devices, window, self.config.source.interval,
                          threading.Event(), during="while its power was watched")
        lines = [self._header(), *(note or []), *self._passive_from(samples)]
        self._emit(lines)
        return 0

    def restore(self) -> int:
        from gputop.advisor import journal
        from gputop.core.errors import GputopError

        self.doc["mode"] = "restore"
        found = journal.find(self.info.host, self.backend.name)
        lines = []
        restored: list[dict[str, Any]] = []
        for j in found:
            if j.alive():
                raise GputopError(f"the advisor run that wrote {j.path} (pid {j.pid}) is still"
                                  " running; it restores its limits when it ends")
            for i, was, now in journal.restore_from(self.backend, j):
                restored.append({"index": i, "was_w": was, "restored_w": now})
                lines.append(f"GPU {i}: {was if was is not None else '?'} W -> {now:g} W")
            lines.append(f"restored the limits journaled in {j.path} and removed it")
        if not found:
            lines.append(f"nothing to restore: no journal for {self.info.host}/{self.backend.name}"
                         f" in {journal.state_dir()}")
        self.doc["restored"] = restored
        self._emit(lines)
        return 0

    def _config(self) -> Any:
        from gputop.advisor.recommend import SweepConfig

        a = self.config
        return SweepConfig(step_w=a.step, settle_s=a.settle, measure_s=a.measure,
                           interval_s=a.source.interval, max_slowdown_pct=a.max_slowdown, eta=a.eta,
                           lowest_w=a.lowest, repeat=a.repeat)

    def sweep(self) -> int:
        from gputop.advisor import journal, passive, render
        from gputop.advisor.recommend import make_plan
        from gputop.advisor.safety import cannot_set, missing_privilege

        mode = "benchmark" if self.argv is not None else "sweep"
        snap = self.backend.sample(self.devices)
        unlimited = [d.index for d in snap.devices if d.power_limit_w is None]
        why = cannot_set(self.backend)
        if unlimited:
            why = (f"GPU {','.join(map(str, unlimited))} reports no power limit (the"
                   f" {self.backend.name} backend cannot read or set one)")
        if why is not None:
            self.doc["skipped"] = {"reason": why, "needs": None, "commands": []}
            _say(f"gputop: cannot sweep: {why}. Showing the passive view instead.")
            return self.passive([f"Sweep skipped: {why}."])
        plan = make_plan(list(snap.devices), self._config())
        if self.config.dry_run:
            self.doc["mode"] = "dry-run"
            self.doc["plan"] = {
                "mode": mode, "command": self.argv,
                "original_limits_w": {str(i): w for i, w in plan.originals.items()},
                "candidates_w": list(plan.candidates), "step_w": plan.step_w,
                "settle_s": plan.config.settle_s, "measure_s": plan.config.measure_s,
                "max_slowdown_pct": plan.config.max_slowdown_pct,
                "worst_case_s": plan.worst_case_s() if mode == "sweep" else None,
                "journal": str(journal.journal_path(self.info.host, self.backend.name,
                                                    plan.uuids.values())),
            }
            self._emit([self._header(), *render.plan_lines(
                            plan, mode, self.argv, limit_commands=self.backend.limit_commands),
                        *render.mig_lines(passive.summarize([snap], self.devices)),
                        "Dry run: nothing was changed."])
            return 0
        if not plan.candidates:
            return self.passive([f"GPU {','.join(map(str, plan.devices))} already at the lowest"
                                 " allowed limit: nothing to sweep"])
        lacking = missing_privilege(self.backend)
        if lacking is not None:
            return self._denied(lacking, plan, None)
        return self._guarded(plan, mode)

    def _denied(self, why: str, plan: Any, samples: list[Any] | None,
                refusal: BaseException | None = None) -> int:
        from gputop.advisor.safety import what_is_needed

        commands = self.backend.limit_commands
        cmds = [c for w in plan.candidates for c in commands(plan.limits_for(w))]
        cmds += commands(plan.originals)
        needs = what_is_needed(refusal)
        if needs is None:  # the GPU itself refuses: no command would help
            self.doc["skipped"] = {"reason": why, "needs": None, "commands": []}
            _say(f"gputop: cannot sweep: {why}.\n  Showing the passive view instead"
                 " (nothing was changed).")
            note = [f"Sweep skipped: {why}."]
        else:
            self.doc["skipped"] = {"reason": why, "needs": needs, "commands": cmds}
            _say(f"gputop: cannot sweep: {why}.\n  Needed: {needs}; or step the limits yourself"
                 f" (each step, then the originals back):\n    " + "\n    ".join(cmds)
                 + "\n  Showing the passive view instead (nothing was changed).")
            note = [f"Sweep skipped: {why}. Needed: {needs}."]
        if samples:
            self.doc["mode"] = "passive"
            self._emit([self._header(), *note, *self._passive_from(samples)])
            return 0
        return self.passive(note)

    def _guarded(self, plan: Any, mode: str) -> int:
        from gputop.advisor import render
        from gputop.advisor.benchmark import Benchmark
        from gputop.advisor.journal import LimitGuard, RestoreFailed
        from gputop.advisor.safety import SignalExit, SignalGuard
        from gputop.advisor.sweep import Sweep
        from gputop.backends.base import NoPermission, Unsupported
        from gputop.core.errors import GputopError

        progress = _ProgressPrinter()
        guard = LimitGuard(self.backend, plan.devices)
        engine: Benchmark | Sweep
        if mode == "benchmark":
            engine = Benchmark(self.backend, plan, guard, self.argv or [], progress=progress,
                               output=sys.stderr)
        else:
            engine = Sweep(self.backend, plan, guard, progress=progress)
        sig = SignalGuard()
        result = None
        denied: BaseException | None = None
        restored: list[Any] = []
        try:
            with sig:
                try:
                    guard.begin(plan.originals)
                    result = engine.run()
                except (NoPermission, Unsupported) as exc:
                    if guard.changed and not _first_write_failed(exc, engine):
                        raise
                    denied = exc
                finally:
                    while True:  # a signal landing before disarm() must not skip the restore
                        try:
                            sig.disarm()
                            restored = guard.finish()
                            break
                        except SignalExit:
                            continue
        except SignalExit as exc:
            progress.clear()
            _say(f"gputop: interrupted by {exc.name}: power limits restored to the originals")
            return exc.exit_code
        except RestoreFailed as exc:
            cause = exc.__context__
            if isinstance(cause, SignalExit):
                raise GputopError(f"interrupted by {cause.name}; {exc}") from None
            if cause is not None:  # say what stopped the sweep too, not only the restore
                raise GputopError(f"{cause}; {exc}") from None
            raise
        finally:
            progress.clear()
        if sig.received is not None:
            import signal

            _say(f"gputop: interrupted by {signal.Signals(sig.received).name}: power limits"
                 " restored to the originals")
            return 128 + sig.received
        if denied is not None:
            return self._denied(str(denied), plan, engine.baseline_samples, denied)
        assert result is not None
        self.doc["mode"] = mode
        self.doc["sweep"] = render.result_json(result, self.backend.limit_commands)
        self.doc["restored"] = [{"index": i, "was_w": was, "restored_w": now}
                                for i, was, now in restored]
        lines = [self._header(), *self._passive_from(result.baseline_samples), ""]
        if result.proxy is not None:
            lines.append(f"Job: {result.proxy.kind}; work rate from {result.proxy.label}"
                         f" (A-B-A, settle {plan.config.settle_s:g} s, measure"
                         f" {plan.config.measure_s:g} s)")
        else:
            lines.append(f"Benchmark: {' '.join(result.command or [])!r}, slowdown from wall time")
        lines += render.table_lines(result.rows, mode, plan.config.max_slowdown_pct)
        if not self.config.no_plot and len(result.rows) > 1:
            lines += ["", render.plot(result.rows, max_slowdown_pct=plan.config.max_slowdown_pct)]
        lines += render.recommendation_lines(result, self.backend.limit_commands)
        lines += render.restored_lines(restored, plan.originals)
        self._emit(lines)
        return 0


def _first_write_failed(exc: BaseException, engine: Benchmark | Sweep) -> bool:
    """NoPermission on the very first change: nothing was changed, fall back to passive."""
    return len(engine.rows) <= 1
