"""Benchmark the dashboard: CPU% of one core, peak RSS and time to first frame.

Runs `gputop` in a detached tmux pane (a real terminal, so the output path is measured too) on the
simulator, by default `--scenario crowded` (8 GPUs x 32 processes) at a 1 s interval for 30 s,
and reads the process's CPU time and peak RSS (VmHWM) from /proc. For scale it measures, in the
same run, the floor: a minimal Textual app that repaints one line per second.

    python bench/tui.py [--seconds 30] [--scenario crowded] [--size 120x40] [--no-floor]

Targets (issue 3): <= 1.5 % of one core, <= 60 MB RSS, first frame <= 0.6 s.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")

# The floor every bench sets the dashboard beside: a Textual app repainting one line a second.
FLOOR = [sys.executable, str(ROOT / "bench" / "floor_app.py")]
FLOOR_READY = "Textual floor"  # on its screen once it drew


def cannot_run(fake_nvml: bool = True) -> str | None:
    """Why a bench in tmux cannot run here (no tmux; no C compiler for the fake NVML), or None."""
    if shutil.which("tmux") is None:
        return "needs tmux (apt-get install tmux)"
    if fake_nvml:
        sys.path.insert(0, str(ROOT))
        from tests.support import cfake

        return cfake.available()
    return None


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def cpu_sample(pid: int) -> tuple[int, int, frozenset[str]]:
    """(utime+stime in clock ticks, the live threads' run time in ns, their thread ids).

    The clock ticks count every thread that ever ran but move in 10 ms steps: over an 8 s window
    a tool at 1.5% of a core is 12 ticks, so one tick is 8% of the figure. The scheduler's
    per-thread run time (/proc/PID/task/TID/schedstat) is exact but forgets a thread that exits."""
    tasks = frozenset(os.listdir(f"/proc/{pid}/task"))
    run_ns = 0
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
                run_ns += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            return cpu_ticks(pid), 0, frozenset()  # no schedstat: ticks only
    return cpu_ticks(pid), run_ns, tasks


def cpu_pct(before: tuple[int, int, frozenset[str]], after: tuple[int, int, frozenset[str]],
            seconds: float) -> float:
    """% of one core between two ``cpu_sample``s: the exact run time where the same threads
    lived throughout, else the clock ticks."""
    if before[2] and before[2] == after[2]:
        return 100.0 * (after[1] - before[1]) / 1e9 / seconds
    return 100.0 * (after[0] - before[0]) / CLK_TCK / seconds


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def run_in_tmux(command: list[str], size: tuple[int, int], seconds: float,
                ready: str, data: str | None, press: str = "") -> dict[str, float]:
    session = f"gputop-bench-{os.getpid()}"
    pidfile = Path(tempfile.mkdtemp()) / "pid"
    # `exec` so the pane's process is the measured one; the pid file says which it is.
    shell = f"echo $$ > {shlex.quote(str(pidfile))}; exec {shlex.join(command)}"
    start = time.monotonic()
    tmux("new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1]),
         "-c", str(ROOT), shell)
    try:
        first = first_data = None
        deadline = start + 20
        while time.monotonic() < deadline and (first is None or (data and first_data is None)):
            screen = tmux("capture-pane", "-p", "-t", session)
            now = time.monotonic() - start
            if first is None and ready in screen:
                first = now
            if data and first_data is None and data in screen:
                first_data = now
            time.sleep(0.01)
        pid = int(pidfile.read_text())
        for key in press:
            tmux("send-keys", "-t", session, key)
        time.sleep(2.0)  # let start-up work settle before measuring the steady state
        t0, c0 = time.monotonic(), cpu_sample(pid)
        time.sleep(seconds)
        t1, c1 = time.monotonic(), cpu_sample(pid)
        rss = peak_rss_mb(pid)
        tmux("send-keys", "-t", session, "q")
        time.sleep(0.5)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    return {
        "cpu_pct": cpu_pct(c0, c1, t1 - t0),
        "rss_mb": rss,
        "first_frame_s": first if first is not None else float("nan"),
        "first_data_s": first_data if first_data is not None else float("nan"),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--scenario", default="crowded")
    ap.add_argument("--interval", default="1")
    ap.add_argument("--size", default="120x40")
    ap.add_argument("--no-floor", action="store_true", help="skip the minimal-Textual floor")
    ap.add_argument("--press", default="", metavar="KEYS",
                    help="keys to press before measuring, e.g. h (history plot shown)")
    args = ap.parse_args()
    why = cannot_run(fake_nvml=False)
    if why is not None:
        print(f"bench/tui.py: {why}", file=sys.stderr)
        return 2
    w, h = (int(x) for x in args.size.lower().split("x"))
    cmd = [sys.executable, "-m", "gputop", "--backend", "sim", "--scenario", args.scenario,
           "--interval", args.interval]
    res = run_in_tmux(cmd, (w, h), args.seconds, ready="gputop", data="PID", press=args.press)
    pressed = f", keys {args.press!r}" if args.press else ""
    print(f"gputop dashboard, sim --scenario {args.scenario}, interval {args.interval}s, "
          f"{w}x{h}{pressed}, {args.seconds:.0f}s measured")
    print(f"  CPU            {res['cpu_pct']:.2f} % of one core   (target <= 1.5)")
    print(f"  peak RSS       {res['rss_mb']:.1f} MB             (target <= 60)")
    print(f"  first frame    {res['first_frame_s']:.3f} s            (target <= 0.6)")
    print(f"  first data     {res['first_data_s']:.3f} s  (GPU cards and process table drawn)")
    if not args.no_floor:
        floor = run_in_tmux(FLOOR, (w, h), args.seconds, ready=FLOOR_READY, data=None)
        print("floor: minimal Textual app repainting one line per second, same terminal")
        print(f"  CPU            {floor['cpu_pct']:.2f} % of one core")
        print(f"  peak RSS       {floor['rss_mb']:.1f} MB")
        if floor["cpu_pct"] > 0:
            print(f"  dashboard/floor CPU ratio {res['cpu_pct'] / floor['cpu_pct']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
