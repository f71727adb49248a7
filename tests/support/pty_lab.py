"""gputop in a real pseudo-terminal that this process is the other end of (``pty.fork``).

The lab is the terminal: it reads everything gputop writes and keeps the modes that output turns
on and off (alternate screen, cursor, mouse reports, bracketed paste, focus reports, the kitty
keyboard stack), it types keys, sends signals, stops reading (a frozen SSH link) or closes its end
(the SSH session dropped), and compares the terminal's modes (``termios``, shared by both ends)
with those it started with. Every process it starts is killed by PID when it closes.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import threading
import time
from collections.abc import Sequence

from tests.support import paths
from tests.support.procs import gone_soon

ROOT = str(paths.ROOT)
PREVIEW = b"starting the dashboard"  # the pre-frame's one line (gputop.commands.dashboard)
TEXTUAL = b"\x1b[?1003h"  # Textual's first mode change: mouse reports on (its driver started)
FIRST_FRAME = b"quit"  # the footer's first key, drawn by the app (the preview has no footer)
_PRIVATE = re.compile(rb"\x1b\[\?([0-9;]+)([hl])")
_KITTY = re.compile(rb"\x1b\[([><])([0-9]*)u")
MOUSE_MODES = (1000, 1002, 1003, 1006, 1015, 1016)
# modes that must be off when gputop has gone: alternate screen, mouse, paste, focus reports
MUST_BE_OFF = (1049, *MOUSE_MODES, 2004, 1004)


# How gputop hangs from the terminal, as users start it:
# - "leader": gputop is the session leader (ssh host gputop);
# - "shell": a shell leads the session and waits for it (tmux new 'sh -c gputop'): a hang-up
#   kills the shell, and the kernel then sends gputop's process group SIGHUP and SIGCONT;
# - "keeper": a leader that survives the hang-up (it ignores SIGHUP) and keeps gputop's exit
#   status in a file: gputop gets no signal at all, only a terminal that answers EIO.
KEEPER = ("import os, signal, subprocess, sys\n"
          "signal.signal(signal.SIGHUP, lambda *_: None)\n"  # caught, so exec resets it
          "code = subprocess.call(sys.argv[2:])\n"
          "open(sys.argv[1], 'w').write(str(code))\n"
          "sys.exit(code & 255)\n")


class Run:
    """One gputop process on a pty of its own (see the modes above)."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], size=(100, 30),
                 mode: str = "leader", status_file: str | None = None) -> None:
        if mode == "shell":
            argv = ["/bin/sh", "-c", '"$@"; exit $?', "sh", *argv]
        elif mode == "keeper":
            assert status_file is not None
            argv = [sys.executable, "-c", KEEPER, status_file, *argv]
        self.mode = mode
        self.status_file = status_file
        self.out = bytearray()
        self._lock = threading.Lock()
        self._reading = threading.Event()
        self._reading.set()
        self._stopping = threading.Event()
        pid, fd = pty.fork()
        if pid == 0:  # the child: the pty is its controlling terminal, fds 0-2
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
                os.chdir(ROOT)
                os.execve(argv[0], list(argv), env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.modes_before = termios.tcgetattr(fd)
        self.status: int | None = None
        self.closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -------------------------------------------------------------- the terminal's side
    def _read(self) -> None:
        # Never blocked inside read(): a close of the terminal's end from another thread takes
        # effect (hangs the pty up) only once no call holds the descriptor.
        while not self._stopping.is_set():
            if not self._reading.is_set() or not select.select([self.fd], [], [], 0.02)[0]:
                time.sleep(0.005)
                continue
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # EIO: every process on the pty is gone
                return
            if not chunk:
                return
            with self._lock:
                self.out += chunk

    def output(self) -> bytes:
        with self._lock:
            return bytes(self.out)

    def wait_for(self, marker: bytes, timeout: float = 30.0) -> float:
        """Wait until ``marker`` has been written; return when (monotonic)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if marker in self.output():
                return time.monotonic()
            if self.exited():
                break
            time.sleep(0.005)
        raise AssertionError(f"{marker!r} never came (status {self.status}):\n"
                             f"{self.output()[-2000:]!r}")

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def freeze(self) -> None:
        """Stop reading, as a stalled SSH link does: gputop's writes soon block."""
        self._reading.clear()

    def thaw(self) -> None:
        """Read again, and what was held back meanwhile."""
        self._reading.set()

    def hang_up(self, warned: float | None = None) -> None:
        """Close the terminal's end: the kernel hangs the pty up (SIGHUP, SIGCONT, EIO).
        ``warned``: first SIGHUP the process group, that many seconds before, as tmux does when
        its server is killed (the app is already stopping when its terminal goes away)."""
        if warned is not None:
            try:
                os.killpg(self.pid, signal.SIGHUP)
            except ProcessLookupError:
                pass
            time.sleep(warned)
        self._stop_reading()
        self.closed = True
        os.close(self.fd)

    def _stop_reading(self) -> None:
        self._stopping.set()
        self._reader.join()

    # -------------------------------------------------------------- the process
    def gputop_pid(self, timeout: float = 10.0) -> int:
        """The gputop process itself (the leader, or the leader's child)."""
        if self.mode == "leader":
            return self.pid
        import psutil

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            children = psutil.Process(self.pid).children()
            if children:
                return children[0].pid
            time.sleep(0.01)
        raise AssertionError("gputop never started under its leader")

    def signal(self, sig: int) -> None:
        try:
            os.kill(self.gputop_pid(), sig)
        except ProcessLookupError:
            pass

    def exited(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status is not None

    def wait(self, timeout: float) -> int | None:
        """gputop's exit status (a negative one for a death by signal), or None past
        ``timeout``; in "keeper" mode as the keeper wrote it down."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.exited():
                if self.mode == "keeper" and self.status_file is not None:
                    with open(self.status_file) as fh:
                        return int(fh.read())
                return self.status
            time.sleep(0.01)
        return None

    def gone(self, pid: int, timeout: float) -> bool:
        """Whether ``pid`` has ended within ``timeout`` (see :func:`ended`)."""
        return gone_soon(pid, timeout, self.exited)

    # -------------------------------------------------------------- what it left behind
    def modes(self) -> dict[int, bool]:
        """The DEC private modes as the output left them (only those it touched)."""
        found: dict[int, bool] = {}
        for numbers, flag in _PRIVATE.findall(self.output()):
            for n in numbers.split(b";"):
                if n:
                    found[int(n)] = flag == b"h"
        return found

    def kitty_depth(self) -> int:
        depth = 0
        for kind, _ in _KITTY.findall(self.output()):
            depth = depth + 1 if kind == b">" else max(0, depth - 1)
        return depth

    def problems(self) -> list[str]:
        """What the terminal was left with that it did not start with.

        Once the run has ended, the reader first reads to the pty's end (EIO: no process left on
        it), so the last bytes gputop wrote, the ones that give the terminal back, are counted
        even when a busy machine let the exit be seen before they were read."""
        if self.exited() and self._reading.is_set() and not self.closed:
            self._reader.join(2.0)
        modes = self.modes()
        found = [f"mode ?{m} left on" for m in MUST_BE_OFF if modes.get(m)]
        if modes.get(25) is False:
            found.append("cursor left hidden")
        if self.kitty_depth():
            found.append("kitty keyboard protocol left pushed")
        if not self.closed:
            now = termios.tcgetattr(self.fd)
            for i, name in enumerate(("iflag", "oflag", "cflag", "lflag")):
                if now[i] != self.modes_before[i]:
                    found.append(f"tty {name} {now[i]:#o}, was {self.modes_before[i]:#o}")
        return found

    def close(self) -> None:
        """Kill whatever is left by PID (the process group: a wrapper's children too)."""
        for kill in (lambda: os.killpg(self.pid, signal.SIGKILL),
                     lambda: os.kill(self.pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass
        if self.status is None:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
        if not self.closed:
            self._stop_reading()
            self.closed = True
            os.close(self.fd)


def gputop_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "gputop", *args]
