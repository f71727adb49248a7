"""The Textual side of owning a terminal: a driver that survives the terminal going away, and the
app base that takes stop requests from :class:`gputop.core.lifeline.Lifeline` and exits in bounded time.

Textual's Linux driver has two traps for a terminal that hangs up (an SSH session dropping, a tmux
server killed), both met in the field:

- a hang-up brings SIGHUP *and* SIGCONT; the driver's SIGCONT handler restarts application mode
  whether or not it had suspended it, on a terminal that is gone: the new writer thread dies on
  its first write (EIO) and every later write waits forever on its full queue, the app's
  shutdown included;
- the input thread turns the read's EIO into a panic (a traceback and exit status 1).

:class:`TerminalDriver` resumes only what it suspended itself, drops writes to a dead terminal
instead of raising in the writer thread, and turns a failed read into a hang-up.

It also makes a lone esc quick. A terminal sends esc as the byte that also starts every escape
sequence (an arrow key is esc [ A), so esc is a key only once nothing has followed it for a while:
Textual's ESCDELAY, 100 ms by default, and its input thread looked again only every 100 ms, so esc
took 100 to 200 ms whatever ESCDELAY said. gputop waits 25 ms, as nvitop does (ESCDELAY, in ms,
still says otherwise), and :class:`KeyReader` looks again when that wait ends. A sequence that
arrives split by more than the wait (a very slow link) reads as esc and then keys; every screen
also closes with the key that opened it or q, which never wait (docs/dashboard.md, Keys).

With nothing pending the input thread sleeps until a byte comes or the driver stops reading
(:class:`_WakingEvent`): Textual's loop woke ten times a second to look at its exit event, a
fifth of a millisecond of CPU each time, as much as the rest of a quiet dashboard's second.
"""

from __future__ import annotations

import asyncio
import gc
import os
import selectors
import threading
from codecs import getincrementaldecoder
from collections.abc import Iterator, Mapping
from typing import Any, TextIO, cast

from textual import constants
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.app import App
from textual.binding import Binding
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widget import AwaitMount

from gputop.core.lifeline import HANGUP_CODE, Lifeline


class TerminalApp(App[int]):
    """An app that owns its terminal until it exits.

    Set ``lifeline`` before ``run()``: from the app's first event on, stop requests (signals, the
    terminal lost, the parent gone) become ``exit(return_code=code)``, and every exit, whatever
    asked for it, is bounded by the lifeline's deadline.
    """

    lifeline: Lifeline | None = None
    BINDINGS = [
        # As htop, nvtop, nvitop and btop: Ctrl-C quits (status 0), also from a filter box.
        Binding("ctrl+c", "quit", "quit", show=False, priority=True),
    ]

    def run_until_stopped(self, lifeline: Lifeline | None) -> int:
        """Run with ``lifeline`` delivering the stop requests; return the exit code."""
        self.lifeline = lifeline
        self.run()
        return self.return_code or 0

    def get_driver_class(self) -> type[Driver]:
        driver = super().get_driver_class()
        # textual-serve's web driver (TEXTUAL_DRIVER) and the headless one are left as they are
        return TerminalDriver if driver is LinuxDriver else driver

    def on_load(self) -> None:
        """Take stop requests on this app's loop, before the driver touches the terminal."""
        if self.lifeline is None:
            return
        loop = asyncio.get_running_loop()

        def stop(code: int) -> None:  # any thread, or a signal handler in the main thread
            try:
                loop.call_soon_threadsafe(self._stop_requested, code)
            except RuntimeError:  # the loop is closed: the app has ended already
                pass

        self.lifeline.attach(stop)

    _started = False
    _stop_code: int | None = None
    BUILD_POLL_S = 0.02

    def _stop_requested(self, code: int) -> None:
        self._stop_code = code
        if self._started:
            self._stop_when_built()

    def _stop_when_built(self) -> None:
        """Exit once no screen is half-built: a stop comes between any two events, and a
        screen torn down before its own mount handler ran fails in that handler (NoMatches,
        exit status 1). A key such as ``q`` waits in the queue behind the mount instead."""
        if all(screen.is_mounted for screen in self.screen_stack):
            self.exit(return_code=self._stop_code or 0)
        else:
            self.set_timer(self.BUILD_POLL_S, self._stop_when_built)

    def on_mount(self) -> None:
        """Carry out a stop that came while the app was starting (this base class's handler
        runs after the subclass's, when the whole screen is built)."""
        self._started = True
        if self._stop_code is not None:
            self._stop_when_built()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Notify as Textual does, as plain text by default: gputop's messages carry names and
        paths that others chose (a job called ``[@click=app.quit]`` is text, not a link)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    _leaving = False

    @property
    def leaving(self) -> bool:
        """Whether an exit has been asked for: from then on nothing new is built or drawn."""
        return self._leaving

    def exit(self, result: int | None = None, return_code: int = 0,
             message: Any = None) -> None:
        """Exit as Textual does, with the lifeline's deadline started first."""
        self._leaving = True
        if self.lifeline is not None:
            self.lifeline.arm(return_code)
        super().exit(result, return_code, message)

    def push_screen(self, screen: Screen[Any] | str, *args: Any, **kwargs: Any) -> Any:
        """Push as Textual does, except once the app is leaving: a key queued before the exit
        (``a`` typed just before a SIGTERM) would build a screen while the app tears everything
        down, and its mount handler would fail there (NoMatches, exit status 1)."""
        if self._leaving:
            return AwaitMount(self.screen, [])
        self._hold_collector()
        return super().push_screen(screen, *args, **kwargs)

    _holding_collector = False

    def _hold_collector(self) -> None:
        """Keep the cyclic garbage collector off until the next frame is out. A screen's
        first open builds some 15 000 objects that live on: the collector's young passes over
        them took 3-8 ms between the key and the screen (#26); they run after it instead."""
        if gc.isenabled():
            gc.disable()
            self._holding_collector = True
            self.call_after_refresh(self._release_collector)

    def _release_collector(self) -> None:
        if self._holding_collector:
            self._holding_collector = False
            gc.enable()

    def on_unmount(self) -> None:
        """Give the collector back if the app ends before the frame it waited for."""
        self._release_collector()


class _DroppingWhenGone:
    """The terminal stream as Textual's writer thread sees it: once a write fails (the terminal
    hung up), later writes are dropped instead of raised, so the writer thread keeps draining its
    queue and nothing that writes ever waits on it."""

    def __init__(self, stream: TextIO, on_gone) -> None:
        self._stream = stream
        self._on_gone = on_gone
        self.gone = False

    def write(self, text: str) -> None:
        if not self.gone:
            try:
                self._stream.write(text)
            except (OSError, ValueError):
                self._lost()

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._lost()

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return True

    def _lost(self) -> None:
        self.gone = True
        self._on_gone()


ESCAPE_DELAY_MS = 25  # how long a lone esc waits for the rest of a sequence; as nvitop's


def escape_delay_s(environ: Mapping[str, str] = os.environ) -> float:
    """Return how long a lone esc waits before it is a key, in seconds: ``ESCDELAY`` in ms, as
    ncurses and Textual read it (an integer, at least 1), else :data:`ESCAPE_DELAY_MS`."""
    try:
        return max(1, int(environ["ESCDELAY"])) / 1000
    except (KeyError, ValueError):
        return ESCAPE_DELAY_MS / 1000


class KeyReader:
    """Turn what the terminal sends into Textual's events with Textual's parser, and say how
    long to wait for more: after input only the escape delay, so that an esc that nothing
    followed is a key as soon as that delay is over (Textual's own loop looked only every
    100 ms). Expired escapes are settled before new input is parsed: an esc and a key typed
    after the delay are two keys, not alt+key."""

    def __init__(self, parser: XTermParser) -> None:
        self.parser = parser
        self._pending = False  # the last input may have left an esc waiting

    def wait(self) -> float | None:
        """Return how long the next wait for input may last (None: until input comes; the
        parser has no deadline then)."""
        # a hair over the delay: the parser's deadline counts from when it took the esc
        return constants.ESCAPE_DELAY + 0.002 if self._pending else None

    def take(self, text: str | None) -> Iterator[Any]:
        """Yield the events of ``text`` (None: the wait ended with no input)."""
        yield from self.parser.tick()
        if text:
            yield from self.parser.feed(text)
        self._pending = bool(text)
        yield from self.parser.tick()


class _WakingEvent(threading.Event):
    """The driver's exit event, which also wakes the input thread's wait: set() writes a byte
    to a pipe that the thread's selector watches beside the terminal (made by the first
    thread that asks for it); clear() drains it, so that the next input thread (after a
    suspend) starts from an empty pipe."""

    def __init__(self) -> None:
        super().__init__()
        self._fds: tuple[int, int] | None = None

    def fileno(self) -> int:
        """The pipe's end to watch."""
        if self._fds is None:
            self._fds = os.pipe()
            for fd in self._fds:
                os.set_blocking(fd, False)
        return self._fds[0]

    def set(self) -> None:
        super().set()
        if self._fds is not None:
            try:
                os.write(self._fds[1], b"x")
            except OSError:  # full: the thread is awake already
                pass

    def clear(self) -> None:
        super().clear()
        if self._fds is not None:
            try:
                while os.read(self._fds[0], 64):
                    pass
            except OSError:  # empty
                pass

    def close(self) -> None:
        """Close the pipe (once no thread waits on it)."""
        fds, self._fds = self._fds, None
        for fd in fds or ():
            os.close(fd)


class TerminalDriver(LinuxDriver):
    """Textual's Linux driver for a terminal that may go away at any moment (see the module)."""

    def __init__(self, app: App, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        # Textual's parser reads its escape delay from here at each esc; one terminal a process
        constants.ESCAPE_DELAY = escape_delay_s()  # type: ignore[misc]  # Final in Textual
        self._lifeline = app.lifeline if isinstance(app, TerminalApp) else None
        # stands in for Textual's file object: it has what the driver calls on it
        self._file = cast(Any, _DroppingWhenGone(cast(TextIO, self._file), self._hung_up))
        self.exit_event = self._wake = _WakingEvent()

    def _hung_up(self) -> None:
        if self._lifeline is not None:
            self._lifeline.request(HANGUP_CODE)

    def _sigcont_application(self, *_: object) -> None:
        # Only a resume after this driver's own suspend (Ctrl-Z): the SIGCONT that comes with a
        # hang-up must not start application mode again on a terminal that is gone.
        if self._must_signal_resume and not self._terminal_lost():
            super()._sigcont_application()

    def _terminal_lost(self) -> bool:
        terminal = self._lifeline.terminal if self._lifeline is not None else None
        return terminal is not None and terminal.lost()

    def start_application_mode(self) -> None:
        terminal = self._lifeline.terminal if self._lifeline is not None else None
        if terminal is not None:
            terminal.taken = True  # from before the first byte: a forced end puts it back
        super().start_application_mode()

    def close(self) -> None:
        super().close()  # the writer thread has written everything, the restore included
        if self._key_thread is None or not self._key_thread.is_alive():
            self._wake.close()  # else left to the process's end: a wait on it must not fail
        terminal = self._lifeline.terminal if self._lifeline is not None else None
        if terminal is not None:
            terminal.taken = False

    def run_input_thread(self) -> None:
        try:
            self._read_input()
        except OSError:
            if self._lifeline is None:
                raise
            self._hung_up()  # EIO: the terminal hung up; not a crash to panic over

    def _read_input(self) -> None:
        """Textual's input loop (LinuxDriver.run_input_thread), its waits set by a KeyReader."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(self._wake.fileno(), selectors.EVENT_READ)  # the exit event was set
        reader = KeyReader(XTermParser(self._debug))
        decode = getincrementaldecoder("utf-8")().decode

        def read(wait: float | None, final: bool = False) -> None:
            ready = any(key.fd == self.fileno for key, _ in selector.select(wait))
            text = decode(os.read(self.fileno, 4096), final=final) if ready else None
            for event in reader.take(text):
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                read(reader.wait())
            read(0.0, final=True)  # what came with the exit, without waiting for more
        finally:
            selector.close()
            try:
                for _ in reader.parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass
