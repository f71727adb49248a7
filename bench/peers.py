"""gputop beside nvitop, gpustat and the Textual floor, on the C fake of libnvidia-ml loaded by
the real nvidia-ml-py binding: live CPU, RSS at 20 s and with the history full, NVML calls/s and
time to the first GPU row.

What it does (every process it starts is killed by PID; tmux runs on its own -L socket):

- builds ../shared/tools/fakenvml/fakenvml.c into a temporary folder (tests/support/cfake.py; set
  FAKENVML_DIR if the folder is elsewhere) and starts real ``sleep`` processes placed on the
  fake GPUs (gpustat and nvitop drop PIDs that do not exist);
- installs nvitop and gpustat into a temporary venv with pip (or uses --peers-venv);
- for each configuration, runs the tools interleaved (gputop, gpustat, nvitop, the floor,
  gputop, ...) in tmux panes of --size: first frame = launch to the first GPU row on the pane;
  CPU = the threads' run time (schedstat, ns; utime+stime where a thread came or went) over
  --seconds after --warmup; RSS at the end (20 s after launch by default); NVML calls/s = calls
  over the whole life (FAKENVML_TRACE, written at a normal exit: each tool is quit with its own
  key) / lifetime. The floor (bench/floor_app.py) is a Textual app that repaints one line each
  interval: what any Textual dashboard costs before it draws anything;
- then (unless --no-keys) the process view's open (enter) and way back (esc) beside nvitop's
  process screen, timed as bench/keys.py times every key (``python bench/keys.py`` for all);
- then (8x32, unless --no-ring) gputop's RSS with its history holding the frames of 10 minutes
  and of an hour at 1 s, filled fast: ``--interval 0.1 --history 600`` and ``--history 100``
  for RING_S seconds hold exactly the frames that 10 min and 1 h at 1 s do (the history keeps a
  fixed number of frames per tier; the span only sets the buckets' width).

Figures are min / median / max over --repeats, and the ratio of gputop's median to the best
peer's median measured in the same run. NVML costs ~1 µs on the fake; on a real driver add
calls/s x the per-call cost (``--configs 8x32@30`` models 30 µs: FAKENVML_CALL_DELAY_US).

    python bench/peers.py                       # the full run (~8 min on 2 cores)
    python bench/peers.py --quick               # 8x32 only, 1 repeat of 4 s: a smoke test
    python bench/peers.py --configs 8x32,8x256 --repeats 5 --seconds 20
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import keys as key_bench  # noqa: E402 - bench/keys.py, beside this script
from layout import final_layout_s  # noqa: E402 - bench/layout.py, beside this script
from tui import FLOOR, FLOOR_READY, cannot_run, cpu_pct, cpu_sample  # noqa: E402 - bench/tui.py

from tests.support import cfake  # noqa: E402

FLOOR_NAME = "Textual floor"
KEYS_WARMUP_S = 20.0  # a history for the process view to plot
KEYS_PRESSES = 5
RING_S = 105.0  # past the span of --history 100 at --interval 0.1: the ring is full


def tools(python: str, peers_bin: Path, interval: str) -> dict[str, tuple[list[str], str, str]]:
    """name -> (command, key that quits it normally, text that only a GPU row shows); gputop
    first, the floor last."""
    return {
        "gputop": ([python, "-m", "gputop", "--backend", "nvml", "--interval", interval], "q",
                   "H100"),
        f"gpustat -i {interval}": ([str(peers_bin / "gpustat"), "-i", interval], "C-c", "H100"),
        # at 120 columns nvitop leaves the name out of its GPU rows: their memory column
        f"nvitop --interval {interval}": ([str(peers_bin / "nvitop"), "--interval", interval],
                                          "q", "GiB / "),
        FLOOR_NAME: ([*FLOOR, interval], "q", FLOOR_READY),
    }


def peers_venv(given: str | None, work: Path) -> Path:
    if given:
        return Path(given) / "bin"
    venv = work / "peers-venv"
    print("installing nvitop and gpustat into a temporary venv ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "nvitop", "gpustat"], check=True,
                   stderr=subprocess.DEVNULL)
    return venv / "bin"


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Tmux:
    def __init__(self) -> None:
        self.socket = f"gputop-peers-{os.getpid()}"

    def __call__(self, *args: str, check: bool = True) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=check,
                              capture_output=True, text=True).stdout

    def kill_server(self) -> None:
        self("kill-server", check=False)


LAYOUT_S = 3.0  # how long gputop's layout is watched after launch (bench/layout.py)


def measure(tmux: Tmux, command: list[str], quit_key: str, row: str, env: dict[str, str],
            size: tuple[int, int], warmup: float, seconds: float, work: Path,
            layout: bool = False) -> dict:
    """One run of one tool. ``layout``: gputop's own regions are watched for LAYOUT_S seconds
    (bench/layout.py): the final layout's time and the reflows after the first full frame."""
    trace = work / f"trace-{time.monotonic_ns()}"
    pidfile = work / f"pid-{time.monotonic_ns()}"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    # bytecode written once to a folder of the bench's, as an installed tool runs: not compiled
    # again at each start because this shell says PYTHONDONTWRITEBYTECODE
    exports += f" PYTHONPYCACHEPREFIX={shlex.quote(str(work / 'pycache'))}"
    shell = (f"echo $$ > {shlex.quote(str(pidfile))}; exec env -u PYTHONDONTWRITEBYTECODE {exports} "
             f"FAKENVML_TRACE={shlex.quote(str(trace))} {shlex.join(command)}")
    session = f"s{time.monotonic_ns()}"
    start = time.monotonic()
    tmux("new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1]),
         "-c", str(ROOT), shell)
    first = final = float("nan")
    reflows = 0
    pid = None
    try:
        if layout:
            seen = final_layout_s(lambda: tmux("capture-pane", "-p", "-t", session, check=False),
                                  start, LAYOUT_S, every=0.01)
            first = seen.first_full_s if seen.first_full_s is not None else float("nan")
            final = seen.final_layout_s if seen.final_layout_s is not None else float("nan")
            reflows = seen.reflows
        deadline = start + 30
        while not layout and time.monotonic() < deadline:
            if row in tmux("capture-pane", "-p", "-t", session, check=False):
                first = final = time.monotonic() - start  # a peer: its first frame is its layout
                break
            time.sleep(0.005)
        pid = int(pidfile.read_text())
        time.sleep(max(0.0, warmup - (time.monotonic() - start)))
        t0, c0 = time.monotonic(), cpu_sample(pid)
        time.sleep(seconds)
        t1, c1 = time.monotonic(), cpu_sample(pid)
        rss = rss_mb(pid)
        tmux("send-keys", "-t", session, quit_key)
        for _ in range(100):  # a normal exit writes the trace
            if not os.path.exists(f"/proc/{pid}"):
                break
            time.sleep(0.05)
        lifetime = time.monotonic() - start
    finally:
        if pid is not None and os.path.exists(f"/proc/{pid}"):
            os.kill(pid, 9)
        tmux("kill-session", "-t", session, check=False)
    calls = sum(cfake.read_trace(trace).values())
    return {"cpu": cpu_pct(c0, c1, t1 - t0), "rss": rss,
            "calls": calls / lifetime if calls else float("nan"), "first": first,
            "final": final, "reflows": reflows}


def one_shots(python: str, peers_bin: Path, env: dict[str, str], runs: int, work: Path) -> None:
    """A whole one-shot process each: wall time and NVML calls (``snapshot --json`` reads every
    field, as a script would want; ``nvitop -1`` and ``gpustat --json`` print less)."""
    commands = {"gputop snapshot --json": [python, "-m", "gputop", "snapshot", "--json",
                                           "--backend", "nvml"],
                "nvitop -1": [str(peers_bin / "nvitop"), "-1"],
                "gpustat --json": [str(peers_bin / "gpustat"), "--json"]}
    walls: dict[str, list[float]] = {n: [] for n in commands}
    calls: dict[str, int] = {}
    for _ in range(runs):
        for name, command in commands.items():
            trace = work / f"trace-{time.monotonic_ns()}"
            start = time.perf_counter()
            subprocess.run(command, env=dict(os.environ, **env, FAKENVML_TRACE=str(trace)),
                           cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
            walls[name].append(time.perf_counter() - start)
            calls[name] = sum(cfake.read_trace(trace).values())
    print("  one-shot        " + "".join(f"{n:>26}" for n in commands))
    print("  wall s          " + "".join(f"{spread(w):>26}" for w in walls.values()))
    print("  NVML calls      " + "".join(f"{calls[n]:>26}" for n in commands))


def spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def report(title: str, results: dict[str, list[dict]], rss_at: float) -> None:
    print(f"\n{title}")
    names = list(results)
    print(f"  {'figure':<18}" + "".join(f"{n:>26}" for n in names)
          + f"{'÷ best peer':>13}{'÷ floor':>9}")
    for key, label in (("cpu", "CPU % of 1 core"), ("rss", f"RSS MB at {rss_at:.0f} s"),
                       ("calls", "NVML calls/s"), ("first", "first frame s"),
                       ("final", "final layout s")):
        med = {n: statistics.median(r[key] for r in results[n]) for n in names}
        best = min(med[n] for n in names[1:] if n != FLOOR_NAME)
        ratio = med[names[0]] / best if best > 0 else float("nan")
        floor = med[FLOOR_NAME] if med[FLOOR_NAME] > 0 else float("nan")
        print(f"  {label:<18}" + "".join(f"{spread([r[key] for r in results[n]]):>26}"
                                          for n in names)
              + f"{ratio:>12.2f}x{med[names[0]] / floor:>8.2f}x")
    reflows = [r["reflows"] for r in results[names[0]]]
    print(f"  gputop's reflows after its first full frame: {max(reflows)} at most"
          f" ({len(reflows)} launches); a peer's first frame is its final layout")
    print("  (cells: min / median / max; ratios: of the medians)")


def process_view(lib: Path, gpus: int, procs: int, nvitop: Path, size: tuple[int, int],
                 interval: float) -> None:
    """Print the process view's open (enter) and way back (esc) beside nvitop's process screen,
    each the median (max) ms from the key to the screen's first change, and their ratio."""
    # as installed: the view's modules compiled, so its first open does not compile them
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "gputop")], check=True)
    ours = next(key_bench.measure(lib, gpus, procs, presses=KEYS_PRESSES, size=size,
                                  interval=interval, warmup=KEYS_WARMUP_S, keys={"enter"}))
    theirs = key_bench.measure_nvitop(lib, gpus, procs, nvitop, presses=KEYS_PRESSES, size=size,
                                      interval=interval)
    print(f"  {'key -> screen ms':<18}{'gputop':>26}{'nvitop':>26}{'÷ nvitop':>13}")
    for label, mine, peer in (("process view", ours.press, theirs.press),
                              ("back with esc", ours.back, theirs.back)):
        ratio = statistics.median(mine.first) / statistics.median(peer.first)
        print(f"  {label:<18}{mine.cell():>26}{peer.cell():>26}{ratio:>12.2f}x")
    print(f"  (median / max of {KEYS_PRESSES} presses, the first the view's first open; "
          "every key: bench/keys.py)")


def ring(tmux: Tmux, python: str, env: dict[str, str], size: tuple[int, int], work: Path,
         peer_rss: float) -> None:
    """gputop's RSS with the history holding the frames of 10 min and of 1 h at 1 s (filled at
    --interval 0.1; see the module's doc), both runs at once, beside the best peer's at 20 s."""
    runs = {"10 min": "600", "1 h": "100"}
    base = [python, "-m", "gputop", "--backend", "nvml", "--interval", "0.1", "--history"]
    found: dict[str, dict] = {}
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {name: pool.submit(measure, tmux, base + [span], "q", "H100", env, size,
                                     RING_S - 8.0, 8.0, work) for name, span in runs.items()}
        for name, future in futures.items():
            found[name] = future.result()
    for name, r in found.items():
        print(f"  RSS with the history holding {name} of 1 s frames: {r['rss']:.2f} MB"
              f" ({r['rss'] / peer_rss:.2f}x the best peer's {peer_rss:.2f} MB)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="8x32,8x256",
                    help="GPUSxPROCESSES, comma separated; @US adds FAKENVML_CALL_DELAY_US")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8.0, help="CPU measuring window")
    ap.add_argument("--warmup", type=float, default=12.0,
                    help="seconds after launch first (RSS is read at warmup + seconds)")
    ap.add_argument("--size", default="120x40")
    ap.add_argument("--interval", default="1")
    ap.add_argument("--peers-venv", help="a venv that has nvitop and gpustat (else a fresh one)")
    ap.add_argument("--quick", action="store_true", help="8x32, 1 repeat, 4 s")
    ap.add_argument("--no-one-shot", action="store_true",
                    help="skip snapshot --json / nvitop -1 / gpustat --json")
    ap.add_argument("--no-keys", action="store_true",
                    help="leave out the process view's key latency beside nvitop's")
    ap.add_argument("--no-ring", action="store_true",
                    help="skip the RSS runs with the history full (2 minutes)")
    args = ap.parse_args()
    if args.quick:
        args.configs, args.repeats, args.seconds, args.warmup = "8x32", 1, 4.0, 2.0
        args.no_ring = args.no_keys = True
    why = cannot_run()
    if why is not None:
        print(f"bench/peers.py: {why}", file=sys.stderr)
        return 2
    size = tuple(int(x) for x in args.size.lower().split("x"))
    tmux = Tmux()
    with tempfile.TemporaryDirectory(prefix="gputop-peers-") as tmp:
        work = Path(tmp)
        lib = cfake.build(work / "lib")
        bin_ = peers_venv(args.peers_venv, work)
        commands = tools(sys.executable, bin_, args.interval)
        print(f"gputop vs peers on the C fake of libnvidia-ml, {args.size}, interval "
              f"{args.interval} s, {args.repeats} repeats interleaved, {args.seconds:g} s CPU "
              f"window after {args.warmup:g} s; {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
        try:
            for config in args.configs.split(","):
                shape, _, delay = config.partition("@")
                gpus, procs = (int(x) for x in shape.split("x"))
                extra_env = {"FAKENVML_CALL_DELAY_US": delay} if delay else {}
                with cfake.Node(lib, gpus=gpus, procs_per_gpu=max(1, procs // gpus)) as node:
                    env = {k: v for k, v in node.env(**extra_env).items()
                           if k in ("LD_LIBRARY_PATH", "FAKENVML_CONFIG",
                                    "FAKENVML_CALL_DELAY_US")}
                    results: dict[str, list[dict]] = {n: [] for n in commands}
                    if not (work / "pycache").exists():  # one launch each, not counted: the
                        for command, key, row in commands.values():  # bytecode is written
                            measure(tmux, command, key, row, env, size, 1.0, 0.5, work)
                    for _ in range(args.repeats):
                        for name, (command, key, row) in commands.items():
                            results[name].append(measure(tmux, command, key, row, env, size,
                                                         args.warmup, args.seconds, work,
                                                         layout=name == "gputop"))
                    title = f"{gpus} GPUs x {procs} processes" + (
                        f", FAKENVML_CALL_DELAY_US={delay}" if delay else "")
                    report(title, results, args.warmup + args.seconds)
                    if shape == "8x32" and not delay and not args.no_ring:
                        ring(tmux, sys.executable, env, size, work, min(
                            statistics.median(r["rss"] for r in results[n])
                            for n in results if n not in ("gputop", FLOOR_NAME)))
                    if not args.no_one_shot:
                        one_shots(sys.executable, bin_, env, args.repeats, work)
                if not args.no_keys and not delay:
                    process_view(lib, gpus, procs, bin_ / "nvitop", size, float(args.interval))
                sys.stdout.flush()
        finally:
            tmux.kill_server()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
