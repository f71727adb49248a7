"""Measure launch -> final layout of the dashboard in a tmux pane: when the header, host line, hint
bar, GPU rows and process-table header stopped moving, and whether anything moved after the first
full frame (issue 26: "Launch -> final layout <= 0.5 s with no reflow afterwards").

The pane is captured every ~20 ms for a few seconds after launch. Each capture is reduced to its
*layout* (tests/support/screen_layout.py): the rows of those regions and the column of each GPU's
title, never their values, so a clock that ticks or a bar that grows is no change while a host
line that pushes the cards down is.

    python bench/layout.py                      # 5 launches on the C fake of libnvidia-ml
    python bench/layout.py --repeats 9 --size 80x24 --gpus 16 --procs 64 --show

From another bench script (bench/peers.py imports from here as it does from bench/tui.py):

    from layout import final_layout_s
    times = final_layout_s(lambda: tmux("capture-pane", "-p", "-t", session), start)

By default the launches write bytecode to a temporary folder (one launch first, not counted), as
an installed gputop runs; ``--as-is`` keeps the environment (``PYTHONDONTWRITEBYTECODE`` set
compiles every module at each start, about 0.1 s more).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui import cannot_run  # noqa: E402 - bench/tui.py, beside this script

from tests.support import cfake  # noqa: E402
from tests.support.screen_layout import (  # noqa: E402 - what other bench scripts import
    Layout,
    LayoutTimes,
    final_layout_s,
    is_full,
    layout_of,
)

__all__ = ["Layout", "LayoutTimes", "final_layout_s", "is_full", "layout_of"]


# ------------------------------------------------------------------------------ the command line
def launch(socket: str, size: tuple[int, int], command: list[str], env: dict[str, str],
           seconds: float, key: str | None = None, answer: str = "") -> LayoutTimes:
    """Start ``command`` in a fresh tmux session of ``size`` and time its layouts (and ``key``,
    typed at the first paint, answered with ``answer`` on the screen)."""
    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", socket, *args], capture_output=True,
                              text=True).stdout

    session = f"l{time.monotonic_ns()}"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    start = time.monotonic()
    tmux("new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1]),
         "-c", str(ROOT), f"exec env {exports} {shlex.join(command)}")
    try:
        press = None if key is None else (lambda: tmux("send-keys", "-t", session, key))
        return final_layout_s(lambda: tmux("capture-pane", "-p", "-t", session), start, seconds,
                              press=press, answer=answer)
    finally:
        tmux("send-keys", "-t", session, "q")
        time.sleep(0.3)
        tmux("kill-session", "-t", session)


def show(times: LayoutTimes) -> None:
    for when, layout, screen in times.seen:
        rows = ", ".join(f"{r}@{y}" + (f":{x}" if x else "") for r, y, x in layout) or "none"
        print(f"    {when:6.3f} s  {rows}")
        if os.environ.get("LAYOUT_SCREENS"):
            print("\n".join("      |" + line for line in screen.rstrip().split("\n")))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5.0, help="watch this long after launch")
    ap.add_argument("--size", default="120x40")
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--procs", type=int, default=32, help="processes in all, spread over GPUs")
    ap.add_argument("--as-is", action="store_true",
                    help="keep the environment's bytecode setting (no warm-up launch)")
    ap.add_argument("--press", metavar="KEY", help="type KEY at the first paint (e.g. p)")
    ap.add_argument("--answer", default="PAUSED",
                    help="what shows once --press's key is answered (default: PAUSED, for p)")
    ap.add_argument("--show", action="store_true",
                    help="print each launch's layouts (LAYOUT_SCREENS=1: their screens too)")
    args = ap.parse_args()
    why = cannot_run()
    if why is not None:
        print(f"bench/layout.py: {why}", file=sys.stderr)
        return 2
    size = (int(args.size.lower().split("x")[0]), int(args.size.lower().split("x")[1]))
    command = [sys.executable, "-m", "gputop", "--backend", "nvml"]
    socket = f"gputop-layout-{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix="gputop-layout-") as tmp:
        lib = cfake.build(Path(tmp) / "lib")
        with cfake.Node(lib, gpus=args.gpus, procs_per_gpu=max(1, args.procs // args.gpus)) as node:
            env = {k: v for k, v in node.env().items()
                   if k in ("LD_LIBRARY_PATH", "FAKENVML_CONFIG", "PYTHONPATH")}
            if not args.as_is:
                command = ["env", "-u", "PYTHONDONTWRITEBYTECODE", *command]
                env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
            runs: list[LayoutTimes] = []
            try:
                if not args.as_is:
                    launch(socket, size, command, env, 2.0)  # writes the bytecode
                for _ in range(args.repeats):
                    runs.append(launch(socket, size, command, env, args.seconds, args.press,
                                       args.answer))
                    if args.show:
                        show(runs[-1])
            finally:
                subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
    print(f"gputop on the C fake of libnvidia-ml, {args.gpus} GPUs x {args.procs} processes, "
          f"{args.size}, {args.repeats} launches, {args.seconds:g} s watched each; "
          f"{'environment as is' if args.as_is else 'bytecode cached'}; "
          f"load {os.getloadavg()[0]:.2f}")

    def cell(values: list[float | None]) -> str:
        got = sorted(v for v in values if v is not None)
        if not got:
            return "none"
        missing = f" ({len(values) - len(got)} never)" if len(got) < len(values) else ""
        return (f"{statistics.median(got):.3f} s (min {got[0]:.3f}, max {got[-1]:.3f})"
                f"{missing}")

    print(f"  first paint        {cell([r.first_paint_s for r in runs])}")
    print(f"  first full frame   {cell([r.first_full_s for r in runs])}")
    print(f"  final layout       {cell([r.final_layout_s for r in runs])}   (goal <= 0.5 s)")
    print(f"  reflows after the first full frame: {[r.reflows for r in runs]}   (goal: none)")
    if args.press:
        print(f"  {args.press!r} typed at the first paint, answered "
              f"{cell([r.answered_s for r in runs])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
