"""The terminal is always given back, and no dashboard outlives its terminal.

Every way out (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT, the terminal hanging up, closing, freezing, the
parent dying) at every moment of the dashboard's life (before Textual's first frame, while
Textual takes the screen, with each screen open, while it shuts down) ends gputop within about
a second, with the documented exit code (0 for Ctrl-C, 128 + the signal otherwise, 129 for a
terminal or parent that went away), and leaves the terminal as it found it: normal screen,
cursor shown, mouse, paste and focus reports off, the kitty keyboard stack popped, tty modes as
they were. The lab in ``pty_lab.py`` is the terminal (a real pty); tmux is a second, real one.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.support.procs import gone_soon
from tests.support.pty_lab import FIRST_FRAME, PREVIEW, TEXTUAL, Run, gputop_argv
from tests.support.tmux import Pane

EXITED_WITHIN_S = 1.5  # the promise is a second from the request; the rest is this machine
CODES = {"ctrl-c": 0, "SIGTERM": 143, "SIGHUP": 129, "SIGQUIT": 131}
SCREENS = {  # a key that opens it, and what it is
    "": "the dashboard", "s": "saturation panel", "d": "process detail", "a": "advisor",
    "?": "help", "h": "history plot", "/": "filter box", "\x10": "command palette",
}


@pytest.fixture
def lab(tmp_path):
    """Start gputop on the simulator in a pty of its own; kill what is left, by PID."""
    env = {**os.environ, "TERM": "xterm-256color", "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONUNBUFFERED": "1"}
    env.pop("NO_COLOR", None)
    runs: list[Run] = []

    def start(*args: str, mode: str = "leader", argv: list[str] | None = None) -> Run:
        run = Run(argv or gputop_argv("--backend", "sim", *args), env, mode=mode,
                  status_file=str(tmp_path / f"status-{len(runs)}"))
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.close()


def stop(run: Run, how: str) -> None:
    if how == "ctrl-c":
        run.type(b"\x03")
    else:
        run.signal(getattr(signal, how))


def assert_given_back(run: Run, pid: int, code: int | None) -> None:
    assert run.gone(pid, EXITED_WITHIN_S), f"gputop {pid} still runs"
    if code is not None:
        assert run.wait(2) == code
    assert run.problems() == []


@pytest.mark.parametrize("how", sorted(CODES))
def test_a_stop_during_the_text_preview_gives_the_terminal_back(lab, how):
    """Before: SIGTERM and SIGHUP had no handler until the app mounted, and the preview's
    alternate screen stayed on; Ctrl-C exited 130 with it on."""
    run = lab()
    run.wait_for(PREVIEW)
    stop(run, how)
    assert_given_back(run, run.pid, CODES[how])


@pytest.mark.parametrize("how", sorted(CODES))
def test_a_stop_while_textual_takes_the_terminal_gives_it_back(lab, how):
    """Before: SIGHUP here killed gputop with raw mode, mouse reports and the kitty stack on;
    an exit requested before the screen was built ended in a NoMatches traceback, status 1."""
    run = lab()
    run.wait_for(TEXTUAL)
    stop(run, how)
    assert_given_back(run, run.pid, CODES[how])


def test_sigcont_alone_does_not_take_the_screen_again(lab):
    """A hang-up brings SIGCONT; Textual's handler restarted application mode on any SIGCONT,
    on a terminal that may be gone (its writer then dies and shutdown blocks on its queue)."""
    run = lab()
    run.wait_for(FIRST_FRAME)
    time.sleep(0.3)
    taken = run.output().count(b"\x1b[?1049h")
    run.signal(signal.SIGCONT)
    time.sleep(0.5)
    assert run.output().count(b"\x1b[?1049h") == taken
    run.type(b"q")
    assert_given_back(run, run.pid, 0)


def test_a_terminal_that_goes_away_without_a_signal_ends_the_dashboard(lab):
    """The session leader survives and sends nothing (as under nohup): the dashboard sees only
    a terminal that answers EIO. Before: it ran on, for good."""
    run = lab(mode="keeper")
    run.wait_for(FIRST_FRAME)
    pid = run.gputop_pid()
    run.type(b"s")
    time.sleep(0.5)
    run.hang_up()
    assert run.gone(pid, EXITED_WITHIN_S)
    assert run.wait(2) == 129


def test_a_frozen_terminal_still_ends_within_a_second_and_is_given_back(lab):
    """A stalled SSH link: gputop's writes block, then SIGHUP. Before: shutdown could wait
    forever on the writer's full queue. Now the deadline ends it, puts the terminal back (the
    stale frames behind the link dropped, the writer's lock released) and exits 129."""
    run = lab()
    run.wait_for(FIRST_FRAME)
    run.type(b"s")
    time.sleep(0.3)
    run.freeze()
    time.sleep(2.5)  # the pty's buffers fill: Textual's writer blocks
    run.signal(signal.SIGHUP)
    assert run.wait(EXITED_WITHIN_S) == 129
    run.thaw()
    time.sleep(0.3)
    assert run.problems() == []


def test_the_dashboard_ends_when_its_parent_dies(lab):
    """A wrapper killed on a time-out leaves gputop to init, drawing over the shell's prompt:
    it now sees its parent go and ends, giving the terminal back."""
    # The shell leads the session and outlives the wrapper (no hang-up, no SIGHUP for gputop).
    wrapper = ["/bin/sh", "-c", '"$@"; sleep 30', "sh", sys.executable, "-c",
               "import subprocess, sys; subprocess.call(sys.argv[1:])",
               *gputop_argv("--backend", "sim")]
    run = lab(argv=wrapper)
    run.wait_for(FIRST_FRAME)
    middle = psutil.Process(run.pid).children()[0]
    pid = middle.children()[0].pid
    middle.kill()
    assert run.gone(pid, EXITED_WITHIN_S)
    time.sleep(0.2)
    assert run.problems() == []


@pytest.mark.parametrize("key", ["s", "d", "a", "h"])
def test_a_killed_tmux_server_never_leaves_the_dashboard_running(tmp_path, key):
    """The field report: the tmux server killed with a screen open left the dashboard alive in
    a tenth to a third of trials (SIGHUP, then SIGCONT restarting Textual on the dead terminal,
    its writer thread dead and shutdown blocked on its queue). Five tries each, on a large pane
    (more writes queued behind the dead writer); test_sigcont_alone_… holds the cause."""
    env = {"TERM": "xterm-256color", "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_STATE_HOME": str(tmp_path / "state")}
    for _ in range(5):
        pane = Pane(tmp_path, " ".join(gputop_argv("--backend", "sim")), env, size=(200, 60))
        try:
            pane.wait_for("quit")
            pid = pane.gputop_pid()
            pane.tmux("send-keys", "-t", "t", key)
            time.sleep(random.uniform(0.2, 1.2))
            subprocess.run(["tmux", "-L", pane.socket, "kill-server"], capture_output=True,
                           timeout=10)
            assert gone_soon(pid, EXITED_WITHIN_S), f"gputop outlived its tmux server ({key!r})"
        finally:
            pane.close()


MOMENTS = ("start", "preview", "textual", "screen", "quitting")
HOWS = (*CODES, "closed")


def test_random_stops_at_random_moments_always_give_the_terminal_back(lab):
    """Trials at random moments of the dashboard's life, each screen open in turn, each way out
    in turn. GPUTOP_TRIALS sets how many (100 for the full proof; the suite runs 24)."""
    trials = int(os.environ.get("GPUTOP_TRIALS", "24"))
    seed = int(os.environ.get("GPUTOP_TRIALS_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    screens = list(SCREENS)
    failures = []
    for i in range(trials):
        how = HOWS[i % len(HOWS)]
        key = screens[i % len(screens)]
        moment = rng.choice(MOMENTS)
        run = lab(mode="shell" if how == "closed" and i % 2 else "leader")
        failure = _trial(run, how, key, moment, rng)
        run.close()
        if failure:
            failures.append(f"trial {i} ({how} at {moment}, {SCREENS[key]}): {failure}")
    assert not failures, f"seed {seed}:\n" + "\n".join(failures)


def _trial(run: Run, how: str, key: str, moment: str, rng: random.Random) -> str | None:
    if moment == "start":
        time.sleep(rng.uniform(0, 1.0))
    elif moment in ("preview", "textual"):
        run.wait_for(PREVIEW if moment == "preview" else TEXTUAL)
    else:
        run.wait_for(FIRST_FRAME)
        time.sleep(0.2)
        if key:
            run.type(key.encode())
        time.sleep(rng.uniform(0, 0.8))
        if moment == "quitting":
            run.type(b"q")
            time.sleep(rng.uniform(0, 0.05))
    pid = run.gputop_pid()
    if how == "closed":
        run.hang_up()
    else:
        stop(run, how)
    if not run.gone(pid, EXITED_WITHIN_S):
        return "still running"
    if how == "closed":
        return None  # the terminal is gone: nothing to give back, no status to read
    status = run.wait(2)
    expected = {0} if moment == "quitting" and how != "ctrl-c" else set()
    expected.add(CODES[how])
    if moment == "start":
        # Before gputop's own code runs, Python's defaults answer (nothing is on the screen
        # yet): a death by the signal (a shell's 128 + N), Ctrl-C as KeyboardInterrupt (130),
        # or, inside the interpreter's own start-up, its "init_import_site" failure (1).
        sig = signal.SIGINT if how == "ctrl-c" else getattr(signal, how)
        expected |= {-sig, 128 + sig}
        if b"init_import_site" in run.output():
            expected.add(1)
    if status not in expected:
        return f"exit status {status}, not {sorted(expected)}"
    time.sleep(0.1)
    problems = run.problems()
    return "; ".join(problems) if problems else None


def _limits(state) -> set[float]:
    import json

    try:
        return set(json.loads(state.read_text())["power_limits"].values())
    except (OSError, ValueError, KeyError):
        return set()


def _mid_sweep(run: Run, state) -> None:
    """Open the advisor, start a sweep, and wait until it has lowered a limit."""
    run.wait_for(FIRST_FRAME)
    run.type(b"a")
    time.sleep(0.8)
    run.type(b"s")
    deadline = time.monotonic() + 20
    while not _limits(state) - {700.0} and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _limits(state) - {700.0}, "the sweep never lowered a limit"


@pytest.mark.parametrize("how", ["closed", "frozen"])
def test_a_terminal_lost_mid_sweep_puts_every_power_limit_back(lab, tmp_path, how):
    """The advisor's sweep changes power limits: a terminal that closes (no signal at all) or
    freezes (then SIGHUP, and the deadline ends the process by force) mid-sweep still ends the
    dashboard within a bounded time, with every limit back at its original."""
    state = tmp_path / "sim-state.json"
    run = lab("--sim-state", str(state), "--sim-speed", "20",
              mode="keeper" if how == "closed" else "leader")
    _mid_sweep(run, state)
    pid = run.gputop_pid()
    if how == "closed":
        run.hang_up()
    else:
        run.freeze()
        time.sleep(2.5)
        run.signal(signal.SIGHUP)
    assert run.gone(pid, 5)
    assert _limits(state) == {700.0}
    assert run.wait(2) == 129



@pytest.mark.parametrize("key", ["a", "s", "d"])
def test_a_stop_while_a_screen_is_being_built_waits_for_it(lab, key):
    """A stop between a key that opens a screen and that screen's own mount: the exit waits
    for the screen to be built. Before, the screen was torn down first and its mount handler
    failed (NoMatches: exit status 1, a traceback on the terminal). Five tries each."""
    for _ in range(5):
        run = lab()
        run.wait_for(FIRST_FRAME)
        time.sleep(0.2)
        run.type(key.encode())
        time.sleep(random.uniform(0, 0.03))
        run.signal(signal.SIGTERM)
        assert run.wait(EXITED_WITHIN_S + 1) == 143, run.output()[-400:]
        assert run.problems() == []
        run.close()
