import sys
from pathlib import Path

import pytest

# ------------------------------------------------------------------ workers and order
E2E = Path(__file__).resolve().parent / "e2e"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """Run two workers per core this process may use: the unit tests spend half their time
    waiting (Textual's pilot, timers), which the second worker fills (2 cores, 2026-11-27: 4
    workers 6 s faster than 3, 5 no faster than 4). $PYTEST_XDIST_AUTO_NUM_WORKERS still wins
    (xdist reads it when this returns None)."""
    import os

    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return 2 * len(os.sched_getaffinity(0))


# Textual's pilot waits after each key and pause until a window of time passes in which the app
# used under a twentieth of it in CPU time. The window, 20 ms, must hold a frame (Textual draws
# at most every 1/60 s) or a wait could end with a frame still to come; those waits were the
# unit suite's largest cost. Here frames come every 8 ms and the window is 10 ms: the same
# guarantee, twice as often (2 cores, 4 workers: 54-55 s, 60-61 s with Textual's own). A 5 ms
# window saved 2 s more but let a wait end while the app, waiting for a core, had not yet run
# what a key or a resize started: tests failed now and then.
FRAME_S = 0.008
IDLE_WINDOW_S = 0.010


def pytest_configure(config: pytest.Config) -> None:
    """Shorten Textual's frame period and the pilot's idle window (FRAME_S, IDLE_WINDOW_S)."""
    import textual._wait
    import textual.screen

    for module, name in ((textual._wait, "SLEEP_GRANULARITY"), (textual._wait, "SLEEP_IDLE"),
                         (textual.screen, "UPDATE_PERIOD")):
        if not hasattr(module, name):  # a Textual that moved it: say so, not run slower
            raise pytest.UsageError(f"{module.__name__}.{name} is gone: see tests/conftest.py")
    textual.screen.UPDATE_PERIOD = FRAME_S
    textual._wait.SLEEP_GRANULARITY = IDLE_WINDOW_S
    textual._wait.SLEEP_IDLE = IDLE_WINDOW_S / 20


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the unit tests first and the e2e tests last, each in pytest-randomly's order: the
    quick ones fail first, and the e2e group starts once the unit tests are handed out."""
    items.sort(key=lambda item: E2E in item.path.resolve().parents)


@pytest.fixture
def fixtures_dir() -> Path:
    """Return the folder of real captures (tests/fixtures)."""
    from tests.support.paths import FIXTURES  # here: a pytester copy of this file runs alone

    return FIXTURES


@pytest.fixture(autouse=True)
def no_user_settings(monkeypatch, tmp_path_factory):
    """No test reads the developer's own ~/.config/gputop (settings file, themes) or writes
    their ~/.local/state/gputop (the alert journal): each folder is an empty one of the test's
    own, and $GPUTOP_CONFIG is unset (subprocesses too)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.delenv("GPUTOP_CONFIG", raising=False)


@pytest.fixture(autouse=True)
def no_frozen_objects():
    """Give back to the collector what a test froze. The dashboard and the query loop call
    ``gc.freeze()`` after their first frame or row, right for the one app of a real process; in
    this one process it kept every earlier test's apps alive for good (a run grew to 2.4 GB)."""
    import gc

    yield
    # Unfrozen objects join the oldest generation, which the collector walks on its own
    # schedule; collecting here as well cost a seventh of the dashboard tests' time.
    gc.unfreeze()


# ------------------------------------------------------------------ nothing outlives the suite
# Every process a test starts (gputop, sshd, Prometheus, Slurm, Chromium, tmux, fake tools,
# and what sshd runs for them) must be gone when the suite ends: a process left behind fails the
# run, named, and is killed. Ours are those that carry this marker in their environment, that
# descend from this pytest, or that name this checkout or this session's temporary folder on
# their command line (sshd's children get a fresh environment; an orphan's parent is 1). Another
# suite running beside this one (another checkout) is not ours.
SESSION_MARK = "GPUTOP_TEST_SESSION"
# How long a process may take to go after the last test. The suite's own hygiene tests run
# inner sessions whose leaks are on purpose, and set a shorter one through the environment.
LEFT_BEHIND_GRACE_ENV = "GPUTOP_LEFT_BEHIND_GRACE_S"
LEFT_BEHIND_GRACE_S = 5.0


@pytest.hookimpl(tryfirst=True)  # before xdist starts its workers: they inherit the mark
def pytest_sessionstart(session: pytest.Session) -> None:
    import os

    import psutil
    import xdist

    if xdist.is_xdist_worker(session):  # its processes carry the controller's mark
        return
    os.environ[SESSION_MARK] = str(os.getpid())
    session.config.stash[_BEFORE] = {p.pid for p in psutil.process_iter()}


_BEFORE = pytest.StashKey[set]()


def _ours(proc, me: int, descendants: set[int], ancestors: set[int],
          folders: tuple[str, ...]) -> bool:
    import psutil

    if proc.pid in descendants:
        return True
    try:
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        mark = proc.environ().get(SESSION_MARK)
        if mark is not None:  # started under some suite: ours only if under this one
            return mark == str(me)
        if _under_another_suite(proc, {me, *ancestors}):
            return False
        # What sshd runs for a test has a fresh environment: it is ours when it, or what it
        # runs under, names one of our folders. The virtual environment's own path does not
        # count: another checkout's tools may run from it.
        venv = sys.prefix + "/"
        for one in (proc, *proc.parents()):
            text = " ".join(one.cmdline()).replace(venv, "")
            if any(folder in text for folder in folders):
                return True
        return False
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _under_another_suite(proc, mine: set[int]) -> bool:
    """Tell whether a process is another pytest run, or runs under one: a suite beside this one
    (another checkout, using this checkout's virtual environment) is not ours to kill. The walk
    up stops at this suite or what runs it (``mine``): an orphan a subreaper adopted is ours."""
    import psutil

    try:
        for one in (proc, *proc.parents()):
            if one.pid in mine:
                return False
            if _is_pytest(one.cmdline()):
                return True
        return False
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _is_pytest(argv: list[str]) -> bool:
    """Tell whether a command line runs pytest (``pytest …`` or ``python -m pytest …``); a path
    that merely holds the word, as pytest's temporary folders do, does not count."""
    names = [arg.rsplit("/", 1)[-1] for arg in argv[:3]]
    return bool(names) and (names[0] in ("pytest", "py.test")
                            or any(a == "-m" and b == "pytest" for a, b in zip(names, names[1:])))


def left_behind(before: set[int], folders: tuple[str, ...]) -> list:
    """The processes started during the session, and still alive, that are the suite's."""
    import os
    import time

    import psutil

    me = os.getpid()
    grace = float(os.environ.get(LEFT_BEHIND_GRACE_ENV, LEFT_BEHIND_GRACE_S))
    deadline = time.monotonic() + grace
    while True:
        try:
            descendants = {p.pid for p in psutil.Process(me).children(recursive=True)}
        except psutil.NoSuchProcess:  # pragma: no cover - this process is alive
            descendants = set()
        ancestors = {p.pid for p in psutil.Process(me).parents()}
        found = [p for p in psutil.process_iter()
                 if p.pid not in before and p.pid != me and p.pid not in ancestors
                 and _ours(p, me, descendants, ancestors, folders)]
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    import psutil

    before = session.config.stash.get(_BEFORE, None)
    if before is None:  # an xdist worker: the controller checks once every worker has ended
        return
    folders = [str(session.config.rootpath) + "/"]  # this checkout (an inner pytester run's own)
    factory = getattr(session.config, "_tmp_path_factory", None)  # pytest's own tmp_path root
    if factory is not None:
        folders.append(str(factory.getbasetemp()) + "/")
    found = left_behind(before, tuple(folders))
    if not found:
        return
    lines = []
    for proc in found:
        try:
            lines.append(f"  {proc.pid} (parent {proc.ppid()}): {' '.join(proc.cmdline())[:160]}")
            proc.kill()
        except psutil.NoSuchProcess:
            continue
    if lines:
        sys.stderr.write("\nprocesses the tests left running (now killed):\n"
                         + "\n".join(lines) + "\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
