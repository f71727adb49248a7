"""Key -> screen latency of the dashboard, for every key in its help, on the C fake of libnvidia-ml.

What it does (every process it starts is killed by PID; tmux runs on its own -L socket):

- builds ../shared/tools/fakenvml/fakenvml.c into a temporary folder (tests/support/cfake.py; set
  FAKENVML_DIR if the folder is elsewhere), starts real ``sleep`` processes placed on its GPUs and
  runs ``gputop --backend nvml`` in a tmux pane of --size, through the real nvidia-ml-py binding;
- reads the keys from the help's rows (gputop.tui.actions.DASHBOARD, the one list of keys): a row
  whose two bindings undo each other (``+ / -``, ``< / >``) and a help word written ``a/b``
  (``up/down``) is a pair, each key the other's way back; every other key of a row is its own;
  quitting ends the app and the replay's keys need a replay: those are left out;
- for each key, several times: waits for a sample to land on screen (live, one a second), sends
  the key with ``tmux send-keys`` and polls ``capture-pane`` every 5 ms (through one tmux control
  client: no process started per poll) until the screen changes: that is the key's latency.
  Then the way back, timed the same way: the pair's other key; else ``esc`` where esc changes
  the screen (a screen, a dialog, a text box opened), and then, a second time, the same key
  again (counted only where it closed what it opened: an esc after it changes nothing); else
  (a toggle) the same key again.

Figures are median / max in milliseconds over --presses; "settled" is the last change before the
screen stood still for 60 ms. The tmux client's own delay is in every figure alike. gputop runs
as installed: its bytecode compiled first (a PYTHONDONTWRITEBYTECODE here is dropped).

    python bench/keys.py                          # 8x32 and 8x256, 3 presses each (~8 min)
    python bench/keys.py --configs 8x32 --keys d,enter,?  # some keys only
    python bench/keys.py --peers-venv DIR         # and nvitop's process screen (Enter / Esc)

bench/peers.py (or any script beside this one) can call :func:`measure` and :func:`report`.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui import cannot_run  # noqa: E402 - bench/tui.py, beside this script

from gputop.tui import actions  # noqa: E402 - the keys, from the one registry
from tests.support import cfake  # noqa: E402

POLL_S = 0.005
CLOCK = re.compile(r"\d\d:\d\d:\d\d")  # the header's clock: the time of the last sample
SETTLED_S = 0.06  # the screen stood still this long: it is drawn
ESC = "escape"

# Help words and Textual key names -> what `tmux send-keys` takes; a single character is sent as
# its bytes (send-keys -H), so that no character is read as a tmux option or key name.
NAMED = {"esc": ESC, "pgup": "pageup", "pgdn": "pagedown"}
TMUX_NAMES = {"escape": "Escape", "enter": "Enter", "space": "Space", "tab": "Tab",
              "backspace": "BSpace", "up": "Up", "down": "Down", "left": "Left",
              "right": "Right", "pageup": "PPage", "pagedown": "NPage", "home": "Home",
              "end": "End"}


def _printable() -> dict[str, str]:
    from textual.keys import _character_to_key  # the names Textual gives what a key types

    return {_character_to_key(c): c for c in string.printable if c.isprintable()}


PRINTABLE = _printable()


def clock_of(screen: str) -> str | None:
    """Return the header's clock on ``screen`` (None where no header shows)."""
    found = CLOCK.search(screen.split("\n", 1)[0])
    return found.group() if found else None


STYLES = re.compile(r"\x1b\[[0-9;]*m")


SAID = re.compile(r" t theme: \S")  # the footer's `t` naming the theme it picked (KeyFooter.say)


def has_notice(screen: str, width: int) -> bool:
    """Return whether a notice shows on ``screen``: Textual's toast (60 columns or half the
    width, at the right, its left edge a ▌), or a footer's key saying what it did, for a few
    seconds (`t`'s theme)."""
    edge = width - min(60, width // 2) - 1
    lines = STYLES.sub("", screen).splitlines()
    return any(len(line) > edge and line[edge] == "▌" for line in lines[:-1]) or \
        bool(lines and SAID.search(lines[-1]))


@dataclass(frozen=True)
class Probe:
    """One key to press: ``label`` as the help writes it, ``key`` its Textual name, ``back`` the
    pair's other key (None: found by pressing, see the module)."""

    label: str
    key: str
    back: str | None = None
    what: str = ""


def textual_name(word: str) -> str:
    """Return Textual's name of a key as the help writes it (``esc``, ``pgup``, ``?``)."""
    word = NAMED.get(word, word)
    return {c: k for k, c in PRINTABLE.items()}.get(word, word) if len(word) == 1 else word


def tmux_args(key: str) -> list[str]:
    """Return the ``send-keys`` arguments that type Textual's key ``key``."""
    from textual.keys import key_to_character

    mods, _, base = key.rpartition("+")
    if base in TMUX_NAMES:
        prefix = "".join({"ctrl": "C-", "shift": "S-", "alt": "M-"}[m] for m in mods.split("+")
                         if m)
        return [prefix + TMUX_NAMES[base]]
    if mods == "ctrl":
        return [f"C-{base}"]
    char = key_to_character(key) or PRINTABLE.get(key)
    if char is None:
        raise ValueError(f"no way to type {key!r} in tmux")
    return ["-H", *(f"{b:02x}" for b in char.encode())]


def probes(registry: tuple[actions.Action, ...] = actions.DASHBOARD) -> list[Probe]:
    """Every key of the help's rows as a probe (see the module for the rules)."""
    out: list[Probe] = []
    for action in registry:
        if action.name == "quit" or action.group == actions.REPLAY:
            continue  # it ends the app; a replay's keys do nothing on a live backend
        if len(action.bound) == 2:  # two bindings that undo each other
            first, second = (k.keys.split(",") for k in action.bound)
            out += [Probe(action.keys, a, b, action.description)
                    for a, b in zip(first, second, strict=False)]
            continue
        words = [action.keys] if action.keys.strip() == "/" else \
            [w for w in action.keys.split() if w != "/"]
        for word in words:
            if "/" in word and word != "/":  # up/down: a pair written as one word
                a, b = (textual_name(w) for w in word.split("/"))
                out.append(Probe(action.keys, a, b, action.description))
            else:
                out.append(Probe(action.keys, textual_name(word), None, action.description))
    return out


class Control:
    """A tmux control client (``tmux -C``) on one pane: each capture is a line written to a pipe
    instead of a process started, so polling every 5 ms costs the machine next to nothing."""

    def __init__(self, socket: str, target: str) -> None:
        self.target = target
        # no-output: no copy of every byte the pane gets; ignore-size: the pane keeps its size
        self.proc = subprocess.Popen(["tmux", "-L", socket, "-C", "attach", "-f",
                                      "no-output,ignore-size", "-t", target],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def _write(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def _block(self) -> list[str]:
        """Read the next answer to a command this client wrote (tmux answers them in order;
        its flags say 1). The attach's own answer (flags 0) comes before or after the first
        of them, and notifications come between answers: both are skipped."""
        assert self.proc.stdout is not None
        out: list[str] = []
        inside = mine = False
        while True:
            raw = self.proc.stdout.readline()
            if not raw:
                raise RuntimeError("the tmux control client ended")
            text = raw.decode(errors="replace").rstrip("\n")
            if not inside:
                inside = text.startswith("%begin ")
                mine = inside and text.split()[-1] == "1"
            elif text.startswith(("%end ", "%error ")):
                if text.startswith("%error ") and mine:
                    raise RuntimeError(f"tmux: {out}")
                if mine:
                    return out
                out, inside = [], False
            else:
                out.append(text)

    def command(self, line: str) -> list[str]:
        """Run one tmux command; return its output lines."""
        self._write(line)
        return self._block()

    def screen(self) -> str:
        return "\n".join(self.command(f"capture-pane -p -e -t {self.target}"))  # -e: styles too (the cursor row)

    def send(self, key: str) -> None:
        self.command(f"send-keys -t {self.target} {shlex.join(tmux_args(key))}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@dataclass
class Timing:
    first: list[float] = field(default_factory=list)  # key -> first change, ms
    settled: list[float] = field(default_factory=list)  # key -> last change, ms
    none: int = 0  # presses that changed nothing

    def add(self, press: tuple[float, float] | None) -> None:
        if press is None:
            self.none += 1
        else:
            self.first.append(press[0])
            self.settled.append(press[1])

    def cell(self) -> str:
        if not self.first:
            return "no change" if self.none else ""
        text = f"{statistics.median(self.first):.0f} / {max(self.first):.0f}"
        return text + (f" ({self.none} none)" if self.none else "")

    def settled_cell(self) -> str:
        return f"{statistics.median(self.settled):.0f}" if self.settled else ""


@dataclass
class KeyResult:
    probe: Probe
    press: Timing = field(default_factory=Timing)
    back_key: str = ""  # the way back that was timed ("" none)
    back: Timing = field(default_factory=Timing)
    again: Timing = field(default_factory=Timing)  # a screen closed with the key that opened it


class Pane:
    """gputop in a tmux pane, timed through a control client."""

    def __init__(self, control: Control, interval: float, width: int) -> None:
        self.control = control
        self.interval = interval
        self.width = width

    def still(self, screen: str, timeout: float) -> str:
        """Wait until the screen stood still for SETTLED_S (at most ``timeout``); return it."""
        end = time.monotonic() + timeout
        last, since = screen, time.monotonic()
        while time.monotonic() < end:
            time.sleep(POLL_S)
            now = self.control.screen()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= SETTLED_S:
                break
        return last

    def no_notice(self, timeout: float = 6.0) -> None:
        """Wait until no notice shows: one that times out while a key is timed would look like
        the key's doing."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and has_notice(self.control.screen(), self.width):
            time.sleep(0.05)

    def sync(self) -> None:
        """Wait for the next sample to be drawn (at most 1.5 intervals: a paused dashboard draws
        none), so that a key is timed in the quiet second after it. Where the header's clock
        shows, the sample is its change."""
        self.no_notice()
        start = self.control.screen()
        clock = clock_of(start)
        end = time.monotonic() + 1.5 * self.interval
        while time.monotonic() < end:
            time.sleep(POLL_S)
            now = self.control.screen()
            if now == start:
                continue
            if clock is None or clock_of(now) != clock:
                self.still(now, 0.5)
                return
            start = now

    def press(self, key: str) -> tuple[float, float] | None:
        """Send ``key`` right after a sample; return (first change, settled) in ms, or None if
        the screen did not change before the next sample was due."""
        self.sync()
        before = self.control.screen()
        t0 = time.perf_counter()
        self.control.send(key)
        end = time.monotonic() + 0.8 * self.interval
        while time.monotonic() < end:
            now = self.control.screen()
            if now != before:
                first = time.perf_counter() - t0
                last, since = now, time.perf_counter()
                while time.perf_counter() - since < SETTLED_S and time.monotonic() < end:
                    time.sleep(POLL_S)
                    later = self.control.screen()
                    if later != last:
                        last, since = later, time.perf_counter()
                return first * 1000, (since - t0) * 1000
            time.sleep(POLL_S)
        return None

    def restore(self) -> None:
        """Close whatever is still open: esc until it changes nothing."""
        for _ in range(5):
            if self.press(ESC) is None:
                return


def time_probe(pane: Pane, probe: Probe, presses: int) -> KeyResult:
    result = KeyResult(probe)
    if probe.back is not None:
        first = pane.press(probe.key)
        if first is None:  # nowhere to go that way (up at the top): the other way first
            probe = Probe(probe.label, probe.back, probe.key, probe.what)
            result = KeyResult(probe)
            first = pane.press(probe.key)
        result.back_key = probe.back
        result.press.add(first)
        result.back.add(pane.press(probe.back))
        for _ in range(presses - 1):
            result.press.add(pane.press(probe.key))
            result.back.add(pane.press(probe.back))
        return result
    for _ in range(presses):
        opened = pane.press(probe.key)
        result.press.add(opened)
        if opened is None:
            continue
        back = pane.press(ESC)
        if back is not None:
            result.back_key = ESC
            result.back.add(back)
        elif result.back_key != ESC:
            result.back_key = probe.key  # a toggle: the key again
            result.back.add(pane.press(probe.key))
    if result.back_key == ESC and probe.key != ESC:
        for _ in range(presses):  # the key that opened it, as the way back
            if pane.press(probe.key) is None:
                continue
            closed = pane.press(probe.key)
            if pane.press(ESC) is None:
                result.again.add(closed)
            else:
                pane.restore()  # the key did not close it (`/` types a slash in the box)
                break
    pane.restore()
    return result


def start(socket: str, command: list[str], env: dict[str, str], size: tuple[int, int],
          cwd: Path, work: Path) -> tuple[int, Control]:
    """Start ``command`` in a new pane; return its PID and a control client on it."""
    pidfile = work / f"pid-{time.monotonic_ns()}"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    shell = f"echo $$ > {shlex.quote(str(pidfile))}; exec env {exports} {shlex.join(command)}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "k", "-x", str(size[0]), "-y",
                    str(size[1]), "-c", str(cwd), shell], check=True)
    for _ in range(200):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        time.sleep(0.01)
    return int(pidfile.read_text()), Control(socket, "k")


def wait_for(control: Control, text: str, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in control.screen():
            return
        time.sleep(0.05)
    raise RuntimeError(f"{text!r} never appeared:\n{control.screen()}")


@contextmanager
def running(socket: str, command: list[str], env: dict[str, str], size: tuple[int, int],
            work: Path) -> Iterator[Control]:
    """``command`` in a tmux pane (see ``start``), its control client; killed by PID after."""
    pid, control = start(socket, command, env, size, work, work)
    try:
        yield control
    finally:
        control.close()
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)


def gputop_env(node: cfake.Node) -> dict[str, str]:
    return {k: v for k, v in node.env(PYTHONPATH=str(ROOT)).items()
            if k in ("LD_LIBRARY_PATH", "FAKENVML_CONFIG", "PYTHONPATH", "ESCDELAY")}


def measure(lib: Path, gpus: int, procs: int, *, presses: int = 3, size=(120, 40),
            interval: float = 1.0, warmup: float = 60.0, keys: set[str] | None = None,
            python: str = sys.executable) -> Iterator[KeyResult]:
    """Time every key of the help (or those named in ``keys``, as the help writes them or by
    Textual name) on a fake node of ``gpus`` x ``procs`` processes, the fake library built in
    ``lib`` (cfake.build); yield each key's result as it is measured."""
    socket = f"gputop-keys-{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix="gputop-keys-") as tmp, \
            cfake.Node(lib, gpus=gpus, procs_per_gpu=max(1, procs // gpus)) as node:
        work = Path(tmp)  # `r` records into it
        command = [python, "-m", "gputop", "--backend", "nvml", "--interval", f"{interval:g}"]
        with running(socket, command, gputop_env(node), size, work) as control:
            wait_for(control, "H100")
            time.sleep(warmup)  # a history to open the process view on
            pane = Pane(control, interval, size[0])
            for probe in probes():
                if keys and probe.label not in keys and probe.key not in keys:
                    continue
                yield time_probe(pane, probe, presses)


def measure_nvitop(lib: Path, gpus: int, procs: int, nvitop: Path, *, presses: int = 3,
                   size=(120, 40), interval: float = 1.0) -> KeyResult:
    """nvitop's process screen: select a process (down), Enter opens it, Esc goes back."""
    socket = f"gputop-keys-nv-{os.getpid()}"
    probe = Probe("enter (nvitop)", "enter", ESC, "nvitop's process metrics screen")
    with tempfile.TemporaryDirectory(prefix="gputop-keys-") as tmp, \
            cfake.Node(lib, gpus=gpus, procs_per_gpu=max(1, procs // gpus)) as node:
        work = Path(tmp)
        env = {k: v for k, v in node.env().items() if k in ("LD_LIBRARY_PATH", "FAKENVML_CONFIG")}
        with running(socket, [str(nvitop), "--interval", f"{interval:g}"], env, size,
                     work) as control:
            wait_for(control, "GiB / ")
            time.sleep(2)
            pane = Pane(control, interval, size[0])
            pane.press("down")  # a process selected
            result = KeyResult(probe, back_key=ESC)
            for _ in range(presses):
                result.press.add(pane.press("enter"))
                result.back.add(pane.press(ESC))
            return result


def key_text(key: str) -> str:
    """Return ``key`` as the help would write it (``esc``, ``?``, ``pageup``)."""
    return "esc" if key == ESC else PRINTABLE.get(key, key)


def report(title: str, results: list[KeyResult], out=sys.stdout) -> None:
    print(f"\n{title}\n"
          f"  {'key':<12}{'press ms':>20}{'settled':>9}   {'back':<6}{'back ms':>20}"
          f"{'same key back':>16}  what", file=out)
    for r in results:
        print(f"  {key_text(r.probe.key):<12}{r.press.cell():>20}{r.press.settled_cell():>9}   "
              f"{key_text(r.back_key) if r.back_key else '':<6}{r.back.cell():>20}"
              f"{r.again.cell():>16}  {r.probe.what[:50]}", file=out, flush=True)
    print("  (ms: median / max of the first change after the key; settled: median of the last"
          " change; back: the way back timed the same way)", file=out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="8x32,8x256", help="GPUSxPROCESSES, comma separated")
    ap.add_argument("--presses", type=int, default=3)
    ap.add_argument("--size", default="120x40")
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--warmup", type=float, default=60.0, help="seconds of history first")
    ap.add_argument("--keys", help="only these keys, comma separated (as the help writes them)")
    ap.add_argument("--peers-venv", help="a venv with nvitop: time its process screen too")
    args = ap.parse_args()
    why = cannot_run()
    if why is not None:
        print(f"bench/keys.py: {why}", file=sys.stderr)
        return 2
    size = tuple(int(x) for x in args.size.lower().split("x"))
    keys = set(args.keys.split(",")) if args.keys else None
    # as installed: bytecode compiled once, so that a screen's first open does not compile its
    # modules (the tmux pane inherits this environment)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "gputop")], check=True)
    print(f"gputop key -> screen latency on the C fake of libnvidia-ml, {args.size}, interval "
          f"{args.interval:g} s, {args.presses} presses; {time.strftime('%Y-%m-%d %H:%M:%S %Z')},"
          f" {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, ESCDELAY "
          f"{os.environ.get('ESCDELAY', 'unset')}")
    with tempfile.TemporaryDirectory(prefix="gputop-keys-lib-") as tmp:
        lib = cfake.build(Path(tmp))
        for config in args.configs.split(","):
            gpus, procs = (int(x) for x in config.split("x"))
            title = f"{gpus} GPUs x {procs} processes"
            results = []
            for result in measure(lib, gpus, procs, presses=args.presses, size=size,
                                  interval=args.interval, warmup=args.warmup, keys=keys):
                results.append(result)
            if args.peers_venv:
                results.append(measure_nvitop(lib, gpus, procs,
                                              Path(args.peers_venv) / "bin" / "nvitop",
                                              presses=args.presses, size=size,
                                              interval=args.interval))
            report(title, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
