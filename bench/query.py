"""Benchmark: `gputop --query-gpu … -lms 10` on the simulator with 8 GPUs, in a subprocess.

gputop's logger and a floor run side by side. The floor is a bare Python loop that sleeps to
absolute deadlines and writes a constant 8-row block: what this machine's scheduler allows any
Python logger at 10 ms, measured in the same seconds as gputop, so a burst of hypervisor steal or a
busy neighbour shows in both columns instead of being blamed on the logger.

Each logger's stdout is a Unix datagram socket, so each sample (its 8 rows are one write) arrives
as one datagram carrying the kernel's timestamp of that write (SO_TIMESTAMPNS): the times are the
logger's own, and a reader that is scheduled late changes none of them.

The run is cut into windows of 5 s (the issue's measure). For each window it prints the p99 error
of the sample period for both; then rows written vs expected, p50/p99/max over the whole run and
each logger's CPU use (% of one core, start-up excluded). The p99 target (< 2 ms) is judged on the
quiet windows, those where the floor's own p99 is under 1 ms: in the others this machine delays
even a loop that does nothing but sleep, and no logger can be measured.

    python bench/query.py [--windows 6] [--seconds 5] [--ms 10]
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
GPUS = 8
FIELDS = ("timestamp,index,name,pci.bus_id,pstate,temperature.gpu,utilization.gpu,"
          "utilization.memory,memory.total,memory.used,memory.free,power.draw,power.limit,"
          "clocks.sm,clocks.mem,clocks_event_reasons.active")
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; Python < 3.14 lacks the name
QUIET_FLOOR_P99_MS = 1.0
TARGET_P99_MS = 2.0

FLOOR = r"""
import os, sys, time
period = float(sys.argv[1]); block = (("x" * 180 + "\n") * 8).encode()
start = time.monotonic(); k = 0
while True:
    os.write(1, block)
    k += 1
    due = start + k * period
    now = time.monotonic()
    if due > now:
        time.sleep(due - now)
"""


class Logger:
    """One logger process and the kernel's time of each of its sample writes."""

    def __init__(self, name: str, cmd: list[str]) -> None:
        self.name = name
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=theirs.fileno(),
                                     stderr=subprocess.DEVNULL,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
        theirs.close()
        self.fd = self.sock.fileno()
        self.ps = psutil.Process(self.proc.pid)
        self.arrivals: list[float] = []
        self._lines = 0
        self.cpu0: tuple[float, float] | None = None
        self.cpu1: tuple[float, float] | None = None

    def read(self) -> None:
        data, ancillary, _, _ = self.sock.recvmsg(1 << 16, socket.CMSG_SPACE(16))
        sent = next(struct.unpack("qq", d[:16]) for level, kind, d in ancillary
                    if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS)
        for _ in range(data.count(b"\n")):
            self._lines += 1
            if self._lines % GPUS == 0:
                self.arrivals.append(sent[0] + sent[1] * 1e-9)

    def cpu_mark(self) -> tuple[float, float]:
        ct = self.ps.cpu_times()
        return ct.user + ct.system, time.monotonic()

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -9

    @property
    def cpu_pct(self) -> float:
        if not (self.cpu0 and self.cpu1):
            return float("nan")
        return 100.0 * (self.cpu1[0] - self.cpu0[0]) / (self.cpu1[1] - self.cpu0[1])


def run_side_by_side(loggers: list[Logger], seconds: float) -> None:
    """Read every logger until ``seconds`` after the last of them wrote its first sample."""
    by_fd = {lg.fd: lg for lg in loggers}
    t_end = None
    deadline = time.monotonic() + 10.0
    while True:
        timeout = max(0.0, (t_end or deadline) - time.monotonic())
        ready, _, _ = select.select(list(by_fd), [], [], timeout)
        now = time.monotonic()
        if t_end is None and now >= deadline:
            raise SystemExit("a logger wrote nothing for 10 s")
        if t_end is not None and now >= t_end:
            break
        for fd in ready:
            lg = by_fd[fd]
            first = not lg.arrivals
            lg.read()
            if first and lg.arrivals:
                lg.cpu0 = lg.cpu_mark()
        if t_end is None and all(lg.arrivals for lg in loggers):
            t_end = now + seconds
    for lg in loggers:
        lg.cpu1 = lg.cpu_mark()


def period_errors(arrivals: list[float], period: float, t0: float, t1: float) -> list[float]:
    """|gap - period| in ms for each pair of consecutive samples whose second one lies in [t0, t1)."""
    return sorted(abs((b - a) - period) * 1000 for a, b in zip(arrivals, arrivals[1:], strict=False)
                  if t0 <= b < t1)


def pct(errors: list[float], p: float) -> float:
    return errors[min(len(errors) - 1, int(p / 100 * len(errors)))] if errors else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=6, help="windows of --seconds each")
    ap.add_argument("--seconds", type=float, default=5.0, help="length of one window")
    ap.add_argument("--ms", type=int, default=10)
    args = ap.parse_args()
    period = args.ms / 1000.0
    floor = Logger("floor", [sys.executable, "-c", FLOOR, str(period)])
    gputop = Logger("gputop", [sys.executable, "-m", "gputop", "--backend", "sim", "--scenario",
                               "training", f"--query-gpu={FIELDS}", "--format=csv,noheader",
                               "-lms", str(args.ms)])
    loggers = [floor, gputop]
    try:
        run_side_by_side(loggers, args.windows * args.seconds)
    finally:
        rcs = {lg.name: lg.stop() for lg in loggers}

    start = max(lg.arrivals[0] for lg in loggers)
    windows = [(start + w * args.seconds, start + (w + 1) * args.seconds) for w in range(args.windows)]
    print(f"gputop query mode, -lms {args.ms}, simulator with {GPUS} GPUs, {len(FIELDS.split(','))} "
          f"fields, beside a bare-Python floor logger; {args.windows} windows of {args.seconds:g} s "
          f"(cpus: {os.cpu_count()}, load avg {os.getloadavg()[0]:.2f})")
    print(f"{'window':>6}{'floor p99':>12}{'gputop p99':>12}")
    quiet: list[float] = []
    quiet_floor: list[float] = []
    for w, (t0, t1) in enumerate(windows, 1):
        f99 = pct(period_errors(floor.arrivals, period, t0, t1), 99)
        g99 = pct(period_errors(gputop.arrivals, period, t0, t1), 99)
        mark = "" if f99 < QUIET_FLOOR_P99_MS else "  (machine noisy: floor delayed too)"
        if f99 < QUIET_FLOOR_P99_MS:
            quiet.append(g99)
            quiet_floor.append(f99)
        print(f"{w:>6}{f99:>9.3f} ms{g99:>9.3f} ms{mark}")

    print(f"\n{'':8}{'rows':>16}{'kept':>9}{'p50 err':>10}{'p99 err':>10}{'max err':>10}{'CPU':>8}")
    kept = {}
    for lg in loggers:
        arr = lg.arrivals
        elapsed = arr[-1] - arr[0]
        expected = int(round(elapsed / period)) + 1
        kept[lg.name] = 100.0 * len(arr) / expected
        errors = period_errors(arr, period, arr[0], arr[-1] + 1)
        print(f"{lg.name:8}{len(arr) * GPUS:>7}/{expected * GPUS:<8}{kept[lg.name]:>8.2f}%"
              f"{pct(errors, 50):>8.3f}ms{pct(errors, 99):>8.3f}ms{errors[-1]:>8.2f}ms"
              f"{lg.cpu_pct:>7.1f}%")

    rows_ok = kept["gputop"] >= 99.0
    clean = rcs["gputop"] == 0
    if quiet:
        p99_ok = max(quiet) < TARGET_P99_MS
        print(f"\nquiet windows (floor p99 < {QUIET_FLOOR_P99_MS:g} ms): {len(quiet)} of {args.windows}; "
              f"gputop p99 in them: median {statistics.median(quiet):.3f} ms, worst {max(quiet):.3f} ms, "
              f"under {TARGET_P99_MS:g} ms in {sum(q < TARGET_P99_MS for q in quiet)}; floor p99 in them "
              f"{min(quiet_floor):.3f}-{max(quiet_floor):.3f} ms")
    else:
        p99_ok = False
        print("\nno quiet window: this machine delayed the bare floor loop by 1 ms or more at p99 in "
              "every window, so the p99 target cannot be judged here; run again later")
    print(f"targets: rows kept >= 99%: {'met' if rows_ok else 'NOT met'}; "
          f"p99 < {TARGET_P99_MS:g} ms in quiet windows: {'met' if p99_ok else 'NOT met'}; "
          f"clean exit on SIGINT: {'yes' if clean else 'NO'} (rc {rcs['gputop']})")
    return 0 if rows_ok and p99_ok and clean else 1


if __name__ == "__main__":
    raise SystemExit(main())
