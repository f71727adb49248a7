"""Ending a long-running terminal program on time, whatever ends it, with the terminal given back.

A run that owns the terminal (the dashboard, the cluster view) can be ended by a stop signal
(Ctrl-C, SIGTERM, SIGHUP, SIGQUIT), by its terminal going away (the SSH session dropped, the tmux
server killed: SIGHUP may be ignored under ``nohup``, and a hung-up terminal only answers EIO),
or by its parent dying (a wrapper killed on a time-out leaves it to init, drawing over a shell).
:class:`Lifeline` turns each of these into one request to stop, with the exit code the caller
documents, from before the first byte is written to the terminal until the process exits:

- before the app's event loop runs (the text preview, Textual's imports), the first request
  raises :class:`Stopped` in the main thread, out of whatever it was waiting on;
- once the app is attached, requests go to the app's own thread-safe stop;
- either way the stop is bounded: if the process has not exited ``grace`` seconds after the
  first request (a writer blocked on a dead terminal, a lock never released), a watchdog puts
  the terminal back itself and ends the process with the same code. Sections that must not be
  cut short (putting a power limit back) hold it off with :func:`critical`.

Textual-free: the dashboard's preview runs under it before Textual is imported.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

from gputop.core.stop_signals import catch, release

GRACE_S = 1.0  # from the first request to stop until the process is gone
CRITICAL_LIMIT_S = 30.0  # the longest a critical section may hold off the forced end
WATCH_PERIOD_S = 0.2  # how often the terminal and the parent are looked at without pidfds
RESET_TRIES = 20  # a forced end's restore: tries 10 ms apart before the terminal is left as is
SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"))
HANGUP_CODE = 128 + signal.SIGHUP

# Everything a Textual app (or the preview) turns on, turned off: the kitty keyboard protocol
# (before leaving the alternate screen, as its specification asks), every mouse mode, bracketed
# paste, focus and in-band resize reports; line wrap back on, the normal screen, the cursor.
RESET = (b"\x1b[<u\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?1016l"
         b"\x1b[?2004l\x1b[?1004l\x1b[?2048l\x1b[?7h\x1b[0m\x1b[?1049l\x1b[?25h")


def quit_code(signum: int) -> int:
    """Return the exit code of a full-screen app stopped by ``signum``: Ctrl-C is its quit key
    (0, also while it starts, when the terminal still turns Ctrl-C into SIGINT); any other
    signal is 128 + its number, as shells report a death by signal."""
    return 0 if signum == signal.SIGINT else 128 + signum


class Stopped(BaseException):
    """A request to stop, raised in the main thread before the app runs. A BaseException, like
    KeyboardInterrupt, so that no ``except Exception`` on the way swallows it."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


# ------------------------------------------------------------------ critical sections

_critical = threading.Condition()
_holders: list[Callable[[], None] | None] = []  # each section's way to wrap up early


@contextmanager
def critical(wrap_up: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold off a forced end while the body runs: a power limit being put back must be put
    back, even when the terminal is already gone. When the deadline passes, ``wrap_up`` is
    called (cancel the sweep, so that it restores now), then the end waits for the body, at
    most CRITICAL_LIMIT_S."""
    with _critical:
        _holders.append(wrap_up)
    try:
        yield
    finally:
        with _critical:
            _holders.remove(wrap_up)
            _critical.notify_all()


def _wait_for_critical(timeout: float) -> None:
    with _critical:
        wrap_ups = [w for w in _holders if w is not None]
    for wrap_up in wrap_ups:
        try:
            wrap_up()
        except Exception:  # the end goes on: a section that cannot wrap up is waited for
            pass
    with _critical:
        _critical.wait_for(lambda: not _holders, timeout)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def dies_with_this_process(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """Return a ``preexec_fn`` that has the child sent ``sig`` when this process dies, even by
    SIGKILL, which no clean-up survives (Linux's parent-death signal; elsewhere nothing).

    The signal comes when the *thread* that started the child ends: for a child that thread
    waits on (a tool run to its end), that is this process's death. libc is loaded here, in
    the parent: between fork and exec the child must not load a library or take a lock."""
    parent = os.getpid()
    prctl = None
    if sys.platform.startswith("linux"):
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl

    def setup() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # this process died before the line above took hold
            os._exit(1)

    return setup


def end_children() -> None:
    """Kill every process this one started, each with its process group (a tool run in a group
    of its own, an ssh session in a session of its own): a forced end skips the clean-ups that
    would have stopped them, and nothing gputop starts may outlive it."""
    import psutil

    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return
    for child in children:
        try:
            if os.getpgid(child.pid) == child.pid:
                os.killpg(child.pid, signal.SIGKILL)
            else:
                child.kill()
        except (OSError, psutil.Error):  # gone already
            pass


# ------------------------------------------------------------------ the terminal

class Terminal:
    """The controlling terminal as found at start: its modes, to be put back, and whether it is
    still there."""

    def __init__(self, fd_in: int = 0, fd_outs: tuple[int, ...] = (2, 1)) -> None:
        self.fd_in = fd_in
        self.fd_out = -1  # Textual draws on stderr, the preview on stdout: the first terminal
        self.path: str | None = None
        self.taken = False  # the alternate screen and its modes are on (the preview, Textual)
        try:
            self.modes: list | None = termios.tcgetattr(fd_in)
        except (termios.error, OSError):
            self.modes = None
        self.fds_out: list[int] = []  # every one of fd_outs that is this terminal
        for fd in fd_outs:
            try:
                path = os.ttyname(fd)
            except OSError:  # not a terminal
                continue
            if self.path is None:
                self.fd_out, self.path = fd, path
            if path == self.path:
                self.fds_out.append(fd)
        try:  # only this session's own terminal can be watched for a hang-up
            self.watched = self.path is not None and os.tcgetpgrp(self.fd_out) >= 0
        except OSError:
            self.watched = False

    def lost(self) -> bool:
        """Tell whether the terminal hung up: a hung-up terminal answers every ioctl with EIO,
        and one that left this session (its session leader died) answers ENOTTY."""
        if not self.watched:
            return False
        try:
            os.tcgetpgrp(self.fd_out)
        except OSError:
            return True
        return False

    def restore(self, discard_pending: bool = False, taken: bool | None = None) -> None:
        """Put the terminal back as it was found, without ever blocking: the escape sequences
        go through a descriptor of its own opened non-blocking (a stalled SSH link cannot hold
        this write, and the shell's shared descriptor keeps its flags), and a dead terminal is
        simply not written to. ``discard_pending``: first drop output the terminal has not
        taken yet (frames queued behind a stalled link), so that the restore fits, and send
        everything else this process writes to the terminal from now on to /dev/null (a writer
        thread blocked on the stalled link would fill the room again). ``taken``: whether the
        screen was taken, as known before others were silenced (default: as it is now)."""
        if (self.taken if taken is None else taken) and self.path is not None:
            self.taken = False
            self._write_reset(discard_pending)
        if self.modes is not None:
            try:
                termios.tcsetattr(self.fd_in, termios.TCSANOW, self.modes)
            except (termios.error, OSError):
                pass

    def silence(self) -> None:
        """Send everything else this process writes to the terminal to /dev/null from now on:
        a writer that would fill the room the restore needs writes nowhere."""
        try:
            devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            return
        for fd in self.fds_out:
            try:
                os.dup2(devnull, fd)
            except OSError:
                pass
        os.close(devnull)

    def _write_reset(self, discard_pending: bool) -> None:
        assert self.path is not None
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            left = RESET
            for _ in range(RESET_TRIES):
                if discard_pending:  # a writer blocked on the full queue may refill it: again
                    termios.tcflush(fd, termios.TCOFLUSH)
                try:
                    left = left[os.write(fd, left):]
                except BlockingIOError:
                    pass
                if not left or not discard_pending:
                    return
                time.sleep(0.01)
        except (termios.error, OSError):  # hung up: nobody to give anything back to
            return
        finally:
            os.close(fd)


# ------------------------------------------------------------------ the watch

class _Watch:
    """What the lifeline's thread sleeps on until something may have ended the run: the
    terminal (it wakes on a hang-up alone), the parent and the session's leader (pidfds: the
    parent dying leaves this process to init; the leader dying takes the session's terminal
    away without a hang-up), and ``wake`` (the run is over). An idle dashboard so costs no
    wake-ups; where pidfds are missing (Linux before 5.3) it looks every WATCH_PERIOD_S."""

    def __init__(self, wake: int, parent: int, terminal: Terminal | None) -> None:
        self._poll = select.poll()
        self._poll.register(wake, select.POLLIN)
        self._fds = [wake]  # closed by close()
        self._timeout_ms: float | None = None
        watched = {parent}
        if terminal is not None and terminal.watched:
            self._poll.register(terminal.fd_out, 0)  # POLLHUP and POLLERR are always reported
            watched.add(os.getsid(0))  # its death matters only for the terminal it takes away
        # A leader outside this PID namespace reads as 0 and cannot be watched but by the clock.
        for pid in watched - {1, os.getpid()}:
            try:
                fd = os.pidfd_open(pid)
            except OSError:  # no pidfds here, or it has gone already (the first look sees it)
                self._timeout_ms = WATCH_PERIOD_S * 1000
                continue
            self._fds.append(fd)
            self._poll.register(fd, select.POLLIN)

    def wait(self) -> None:
        """Sleep until something happened or the period passed. What woke it is not waited on
        again (a dead process stays readable, a hung-up terminal keeps saying so): the caller
        looks at the state itself, and then only the period is left for it."""
        for fd, _ in self._poll.poll(self._timeout_ms):
            if fd != self._fds[0]:
                self._poll.unregister(fd)
                self._timeout_ms = WATCH_PERIOD_S * 1000

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)


# ------------------------------------------------------------------ the lifeline

_terminal_run_over = False  # a lifeline of this process has ended: see `exit_process`


def exit_process(code: int) -> NoReturn:
    """End the process with ``code`` (the entry points call this, and nothing else does).

    After a terminal app's run (a lifeline ended: its terminal is given back), the stop signals
    are ignored from here to the end: the interpreter's finalization puts Python's own signal
    handlers back to the defaults before the process ends, and a Ctrl-C or SIGQUIT in that last
    moment would end the process by the signal instead of with ``code`` (seen in
    tests/e2e/tui/test_terminal_given_back.py's trials). An ignored disposition is one Python
    leaves in place, and the rest of the exit runs as usual (atexit, the C libraries' own
    destructors: the fake NVML writes its call trace there)."""
    if _terminal_run_over and threading.current_thread() is threading.main_thread():
        for sig in SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
    sys.exit(code)


class Lifeline:
    """Stop requests from signals, a lost terminal or a dead parent, delivered once, bounded.

    ``code_for(signum)`` is the exit code for a signal. Use as a context manager around the
    whole run; :meth:`attach` once the app can stop itself.
    """

    def __init__(self, code_for: Callable[[int], int], terminal: Terminal | None = None,
                 grace: float = GRACE_S) -> None:
        self.code_for = code_for
        self.terminal = terminal
        self.grace = grace
        self.code: int | None = None  # the first request's code
        self._stop: Callable[[int], None] | None = None
        self._raising = True
        self._previous: dict[int, object] = {}
        self._done = threading.Event()
        self._armed = threading.Lock()
        self._forcing = threading.Event()  # the deadline passed: the process ends from there
        self._entered = False  # only a run inside ``with`` may be ended by the deadline
        self._over = threading.Event()  # the run returned: what follows is the caller's
        self._ending = threading.Lock()  # between the two above
        self._parent = os.getppid()

    def __enter__(self) -> Lifeline:
        self._entered = True
        wake, self._wake = os.pipe()
        threading.Thread(target=self._watch, args=(wake,), name="gputop-lifeline",
                         daemon=True).start()
        # Last: from here a signal raises Stopped, which only the body of ``with`` catches.
        # Caught before the thread had started, one raised inside Thread.start() (it waits for
        # the thread) and left the process by a traceback, exit status 1.
        self._previous = catch(self._on_signal, SIGNALS)
        return self

    def __exit__(self, *exc: object) -> None:
        global _terminal_run_over
        _terminal_run_over = True
        self._done.set()
        try:  # wake the watch; it may have ended already (it asked for a hang-up)
            os.write(self._wake, b"x")
        except OSError:
            pass
        os.close(self._wake)
        self._entered = False
        with self._ending:
            if not self._forcing.is_set():
                self._over.set()  # the run is over in time: the deadline ends nothing now
        if self._forcing.is_set():
            # The forced end is under way (it may be what let this thread finish): it restores
            # the terminal and ends the process; finishing first would cut it short.
            self._forcing.wait()
            time.sleep(self.grace)
        release(self._previous)
        if self.terminal is not None:
            # After a clean Textual exit nothing is taken and only the modes are set again;
            # after Stopped, an exception, or an app that ended before its driver started, the
            # preview's alternate screen is still on.
            self.terminal.restore()

    def attach(self, stop: Callable[[int], None]) -> None:
        """Deliver requests to ``stop(code)`` from now on (it must be safe to call from any
        thread, and from a signal handler); a request already made is delivered at once."""
        self._stop = stop
        self._raising = False
        if self.code is not None:
            stop(self.code)

    def detach(self) -> None:
        """Deliver no more requests: the app has ended; later ones only bound the exit."""
        self._stop = None
        self._raising = False

    def arm(self, code: int) -> None:
        """Start the bounded stop: end the process with the first stop's code if it is still
        here after the grace period. The app calls this for every exit (``q`` included), so a
        signal during that exit neither changes its code nor starts a second deadline."""
        if self.code is None:
            self.code = code
        if not self._entered or not self._armed.acquire(blocking=False):
            return  # outside ``with``: nothing here may end the process
        threading.Thread(target=self._force, args=(self.code,), name="gputop-deadline",
                         daemon=True).start()

    def request(self, code: int) -> None:
        """Ask the run to stop with ``code``; the first reason to stop wins."""
        if self.code is not None:
            return
        self.arm(code)
        stop = self._stop
        if stop is not None:
            stop(code)

    # -------------------------------------------------------------- internals

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        first = self.code is None
        self.request(self.code_for(signum))
        if first and self._raising:
            self._raising = False
            raise Stopped(self.code_for(signum))

    def _watch(self, wake: int) -> None:
        """Turn a lost terminal or a dead parent into a request, as SIGHUP would; ``wake`` is
        readable once the run is over."""
        watch = _Watch(wake, self._parent, self.terminal)
        try:
            while not self._done.is_set():
                parent_gone = self._parent != 1 and os.getppid() != self._parent
                if parent_gone or (self.terminal is not None and self.terminal.lost()):
                    break
                watch.wait()
            else:
                return
        finally:
            watch.close()
        if self._raising and signal.SIGHUP in self._previous:
            # the main thread may be waiting on anything: a real signal interrupts it
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGHUP)
        else:
            self.request(HANGUP_CODE)

    def _force(self, code: int) -> None:
        time.sleep(self.grace)
        _wait_for_critical(CRITICAL_LIMIT_S)
        with self._ending:
            if self._over.is_set():
                return
            self._forcing.set()
        terminal = self.terminal
        if terminal is not None:
            taken = terminal.taken  # a clean stop finishing now would write its restore nowhere
            terminal.silence()
            self._interrupt_threads()
            terminal.restore(discard_pending=True, taken=taken)
        end_children()
        os._exit(code)

    def _interrupt_threads(self) -> None:
        """Interrupt every other thread's system call with a signal this lifeline handles: a
        writer blocked on a stalled terminal holds the terminal's write lock, and no other write
        gets through until its write returns (into /dev/null, once retried)."""
        sig = next(iter(self._previous), None)
        if sig is None:
            return
        me = threading.get_ident()
        for thread in threading.enumerate():
            if thread.ident is not None and thread.ident != me:
                try:
                    signal.pthread_kill(thread.ident, sig)
                except (ProcessLookupError, OSError):  # it has just ended
                    pass
        time.sleep(0.01)  # let them return from the kernel
