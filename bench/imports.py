"""What the dashboard imports, and what each import costs in start-up time and resident memory,
beside Textual's own floor measured in the same run.

    python bench/imports.py [--seconds 20] [--repeats 3] [--size 120x40] [--top 14]

Everything runs on the C fake of libnvidia-ml (tests/support/cfake.py; 8 GPUs x 32 processes)
through the real nvidia-ml-py binding, in tmux panes on this script's own -L socket; every
process it starts is killed by PID.

1. Phases: one process walks the dashboard's start path (gputop/commands/dashboard.py) step by
   step and reads its VmRSS and the time after each: bare python, the command line parsed, the
   backend opened and sampled once, asyncio, textual.app, gputop.tui.app; beside them
   `import gputop.tui.app` and `import textual.app` alone.
2. The dashboard (`python -m gputop --backend nvml`) and the floor (a minimal Textual app that
   repaints one line a second) in a pane each, interleaved, VmRSS at 1 s and at --seconds.
3. Per module: the dashboard once more under a probe (this script with --probe) that wraps the
   import system's one loading step, so that it sees every module the dashboard loads up to
   --seconds, also those loaded through importlib.import_module (pynvml), which
   `python -X importtime` does not report. Per module it takes the self time, as -X importtime
   counts it, and the RSS the import added; a second probe run, under tracemalloc, the Python
   heap each import left held and, at --seconds, the largest allocation sites. It also says
   which of what the first screen must not load (tests/support/start_imports.py) was loaded.

gputop's bytecode is compiled first and written as installed code has it: a start that compiles
every module (PYTHONDONTWRITEBYTECODE) has about 1.6 MB more RSS.

RSS is page-granular and Python's allocator keeps the pages of an import's transient peak
(dataclass and Enum construction compile code), so the per-module RSS adds up to the phases'
figures but is not what a module's objects occupy; the heap column is.
"""

from __future__ import annotations

import os
import sys
import time


def _probe(out: str, seconds: float, traced: bool, argv: list[str]) -> None:
    """Run the dashboard (``gputop ARGV``) in this process with every module load measured;
    write what was measured to ``out`` (JSON) once ``seconds`` have passed."""
    import _frozen_importlib as bootstrap  # the import system's module; its loader step below
    import threading
    import tracemalloc

    page = os.sysconf("SC_PAGE_SIZE")
    statm = os.open("/proc/self/statm", os.O_RDONLY)
    if traced:
        tracemalloc.start(1)

    def rss() -> int:
        return int(os.pread(statm, 128, 0).split()[1]) * page

    def heap() -> int:
        return tracemalloc.get_traced_memory()[0] if traced else 0

    rows: dict[str, list[float]] = {}  # module -> [self s, self RSS, self heap]
    stack: list[list[float]] = []  # per load in progress: what its own imports took
    load = bootstrap._load_unlocked

    def measured(spec):  # every import that executes a module goes through this one function
        stack.append([0.0, 0, 0])
        t0, r0, h0 = time.perf_counter(), rss(), heap()
        try:
            return load(spec)
        finally:
            whole = [time.perf_counter() - t0, rss() - r0, heap() - h0]
            inner = stack.pop()
            rows[spec.name] = [w - i for w, i in zip(whole, inner, strict=True)]
            if stack:
                stack[-1] = [s + w for s, w in zip(stack[-1], whole, strict=True)]

    def dump() -> None:
        loaded = [k for k, v in list(sys.modules.items()) if v is not None]
        import json  # after the list: the dashboard itself does not load it

        top = []
        if traced:
            stats = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(False, "<frozen *>")]).statistics("lineno")
            top = [(str(s.traceback[0]), s.size) for s in stats[:10]]
        with open(out + ".part", "w") as fh:
            json.dump({"rows": rows, "rss": rss(), "top": top, "loaded": loaded}, fh)
        os.replace(out + ".part", out)

    bootstrap._load_unlocked = measured
    timer = threading.Timer(seconds, dump)
    timer.daemon = True
    timer.start()
    import runpy

    sys.argv = ["gputop", *argv]
    runpy.run_module("gputop", run_name="__main__", alter_sys=True)


if __name__ == "__main__" and sys.argv[1:2] == ["--probe"]:
    # before anything else is imported: the probe sees the dashboard's imports, not this script's
    _probe(sys.argv[2], float(sys.argv[3]), sys.argv[4] == "traced", sys.argv[5:])
    raise SystemExit(0)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Run by `python -c` with the fake's environment: the dashboard's start path, a phase at a time.
PHASES = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
def rss():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) / 1024 for l in fh if l.startswith("VmRSS:"))
t0 = time.perf_counter()
def phase(label):
    print(f"{label}\t{rss():.2f}\t{(time.perf_counter() - t0) * 1e3:.1f}")
phase("bare python")
from gputop.commands import dashboard, main
argv = ["--backend", "nvml", "--no-config"]
parser = main.build_parser()
config = dashboard.checked(dashboard.configure(parser, argv, parser.parse_args(argv)))
phase("+ command line parsed (gputop.commands.main)")
from gputop.backends import open_backend
from gputop.core.selection import select_devices
from gputop.tui.text.wants import DASHBOARD
backend = open_backend(config.source.backend, config.source.options)
backend.sample(select_devices(None, backend.info().devices), wants=DASHBOARD)
phase("+ NVML backend opened, one sample")
dashboard.import_asyncio_without_tls()
phase("+ asyncio (without ssl)")
import textual.app
phase("+ textual.app")
import gputop.tui.app
phase("+ gputop.tui.app")
backend.close()
"""

IMPORT_ONE = """
import importlib, sys
importlib.import_module(sys.argv[1])
with open("/proc/self/status") as fh:
    print(next(int(l.split()[1]) / 1024 for l in fh if l.startswith("VmRSS:")))
"""


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS:"))


class Pane:
    """One command in a detached tmux pane on this script's own server; its PID known."""

    socket = f"gputop-imports-{os.getpid()}"

    def __init__(self, command: list[str], env: dict[str, str], size: tuple[int, int],
                 work: str) -> None:
        import shlex
        import subprocess

        self.run = subprocess.run
        pidfile = os.path.join(work, f"pid-{time.monotonic_ns()}")
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        self.session = f"s{time.monotonic_ns()}"
        self.start = time.monotonic()
        self.tmux("new-session", "-d", "-s", self.session, "-x", str(size[0]), "-y", str(size[1]),
                  "-c", ROOT, f"echo $$ > {pidfile}; exec env {exports} {shlex.join(command)}")
        while not (os.path.exists(pidfile) and os.path.getsize(pidfile)):
            time.sleep(0.005)
        with open(pidfile) as fh:
            self.pid = int(fh.read())

    def tmux(self, *args: str) -> None:
        self.run(["tmux", "-L", self.socket, *args], check=False, capture_output=True)

    def rss_at(self, seconds: float) -> float:
        time.sleep(max(0.0, self.start + seconds - time.monotonic()))
        return rss_mb(self.pid)

    def close(self, quit_key: str = "q") -> None:
        self.tmux("send-keys", "-t", self.session, quit_key)
        for _ in range(60):
            if not os.path.exists(f"/proc/{self.pid}"):
                break
            time.sleep(0.05)
        else:
            os.kill(self.pid, 9)
        self.tmux("kill-session", "-t", self.session)


def group(module: str) -> str:
    """The table row a module counts in: gputop's rooms (the backends by backend), else the
    top-level package, its C part (``_json``) with it."""
    parts = module.split(".")
    if parts[0] == "gputop":
        return ".".join(parts[:3 if parts[1:2] == ["backends"] and len(parts) > 3 else 2])
    return parts[0].lstrip("_") or module


def spread(values: list[float]) -> str:
    import statistics

    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def main() -> int:
    import argparse
    import json
    import subprocess
    import tempfile
    from collections import defaultdict
    from pathlib import Path

    sys.path.insert(0, ROOT)
    from tui import FLOOR, cannot_run  # bench/tui.py, beside this script

    from tests.support import cfake
    from tests.support.start_imports import held_out, loaded

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="when RSS is read")
    ap.add_argument("--repeats", type=int, default=3, help="dashboard and floor runs")
    ap.add_argument("--size", default="120x40")
    ap.add_argument("--top", type=int, default=14, help="rows of the per-module table")
    args = ap.parse_args()
    why = cannot_run()
    if why:
        print(f"bench/imports.py: {why}", file=sys.stderr)
        return 2
    size = (int(args.size.split("x")[0]), int(args.size.split("x")[1]))
    # as installed: bytecode compiled once, not at every start (which adds about 1.6 MB of RSS)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(ROOT, "gputop")],
                   check=True)
    py = sys.executable
    gputop = [py, "-m", "gputop", "--backend", "nvml", "--no-config"]
    with tempfile.TemporaryDirectory(prefix="gputop-imports-") as work, \
            cfake.Node(cfake.build(Path(work) / "lib"), gpus=8, procs_per_gpu=4) as node:
        env = {k: v for k, v in node.env().items() if k in ("LD_LIBRARY_PATH", "FAKENVML_CONFIG")}
        env["PYTHONPATH"] = ROOT
        full_env = dict(os.environ, **env)
        phases: dict[str, list[float]] = defaultdict(list)
        running: dict[str, list[float]] = defaultdict(list)
        start_ms: dict[str, list[float]] = defaultdict(list)  # since the phases' bare python
        try:
            for _ in range(args.repeats):
                out = subprocess.run([py, "-c", PHASES, ROOT], env=full_env, check=True,
                                     capture_output=True, text=True).stdout
                for line in out.splitlines():
                    label, mb, ms = line.split("\t")
                    phases[label].append(float(mb))
                    start_ms[label].append(float(ms))
                for label, module in (("import gputop.tui.app alone", "gputop.tui.app"),
                                      ("floor: import textual.app (ssl included)",
                                       "textual.app")):
                    alone = subprocess.run([py, "-c", IMPORT_ONE, module], env=full_env,
                                           check=True, capture_output=True, text=True).stdout
                    phases[label].append(float(alone))
                for name, command in (("dashboard", gputop), ("floor", FLOOR)):
                    pane = Pane(command, env, size, work)
                    try:
                        running[f"{name} at 1 s"].append(pane.rss_at(1.0))
                        running[f"{name} at {args.seconds:g} s"].append(pane.rss_at(args.seconds))
                    finally:
                        pane.close()
            probes = []
            for mode in ("plain", "traced"):
                out_file = os.path.join(work, f"probe-{mode}.json")
                pane = Pane([py, os.path.abspath(__file__), "--probe", out_file,
                             str(args.seconds), mode, *gputop[3:]], env, size, work)
                try:
                    while not os.path.exists(out_file) and time.monotonic() - pane.start < 120:
                        time.sleep(0.1)
                finally:
                    pane.close()
                with open(out_file) as fh:
                    probes.append(json.load(fh))
        finally:
            subprocess.run(["tmux", "-L", Pane.socket, "kill-server"], capture_output=True)

    print(f"gputop dashboard on the C fake of NVML, 8 GPUs x 32 processes, {args.size}; "
          f"{time.strftime('%Y-%m-%d %H:%M %Z')}, load {os.getloadavg()[0]:.2f}, "
          f"{args.repeats} runs: median (min-max)")
    print(f"\n{'phase':<56}{'RSS MB':>20}{'ms from bare':>20}")
    for label, values in {**phases, **running}.items():
        ms = spread(start_ms[label]) if label in start_ms else ""
        print(f"  {label:<54}{spread(values):>20}{ms:>20}")

    plain, traced = probes
    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for name, (self_s, self_rss, _) in plain["rows"].items():
        row = rows[group(name)]
        row[0] += 1
        row[1] += self_s * 1e3
        row[2] += self_rss / 1024
    for name, (_, _, self_heap) in traced["rows"].items():
        rows[group(name)][3] += self_heap / 1024
    ranked = sorted(rows.items(), key=lambda kv: -kv[1][2])
    shown, rest = ranked[:args.top], ranked[args.top:]
    print(f"\nper package, every module loaded by {args.seconds:g} s (self: its own imports"
          f" counted in their rows)")
    print(f"  {'package':<28}{'modules':>8}{'import ms':>11}{'RSS KiB':>9}{'heap KiB':>10}")
    for name, (count, ms, kib, heap) in shown + [
            (f"{len(rest)} others", [sum(r[1][i] for r in rest) for i in range(4)]),
            ("total", [sum(r[1][i] for r in ranked) for i in range(4)])]:
        print(f"  {name:<28}{count:>8.0f}{ms:>11.1f}{kib:>9.0f}{heap:>10.0f}")
    gputop_rows = [(n, r) for n, r in ranked if n.startswith("gputop")]
    print(f"  gputop's own, {sum(r[0] for _, r in gputop_rows):.0f} modules:"
          f" {sum(r[1] for _, r in gputop_rows):.1f} ms, {sum(r[2] for _, r in gputop_rows):.0f}"
          f" KiB RSS; by room (KiB): "
          + ", ".join(f"{n.removeprefix('gputop.')} {r[2]:.0f}" for n, r in gputop_rows))
    held = held_out("nvml")
    wrong = loaded(plain["loaded"], held)
    print(f"\nheld out (not loaded by then): {len(held) - len(wrong)} of {len(held)} listed in"
          f" tests/support/start_imports.py; loaded: {', '.join(wrong) or 'none of them'}")
    print(f"\nlargest heap allocation sites at {args.seconds:g} s (tracemalloc, KiB)")
    for where, size_b in traced["top"]:
        print(f"  {size_b / 1024:8.0f}  {where.replace(ROOT + '/', '')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
