"""Running an external tool whose output is untrusted: npu-smi, Slurm's squeue, scontrol, sinfo.

Every run is bounded and leaves nothing behind. The tool runs in a session of its own (its
children share its process group), by a deadline; its
standard output is read up to a cap and no further, and the first ``MAX_STDERR_BYTES`` of its
standard error are kept for a message. Its standard input is /dev/null, or the bytes a caller
hands it (an alert's JSON), read from an unlinked temporary file so that a tool that never reads
them cannot block the writer. On every way out of :meth:`ToolRunner.run` (the tool's
exit, a timeout, too much output, ``close()`` from another thread, an exception: a signal
handler's included) the whole group is killed, so a tool's child (``sleep 1000 & wait``) never
outlives it. What the tool printed is returned as bytes: decoding is the caller's (a parser
refuses what is not UTF-8; a message replaces it).

Failures are typed (ToolTimeout, ToolOutputTooLarge, ToolClosed; FileNotFoundError and OSError
from starting it); each caller words them as one line naming its tool.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

from gputop.core.lifeline import dies_with_this_process
from gputop.core.userfile import one_line

MAX_OUTPUT_BYTES = 4 << 20  # far above any real output of these tools; a runaway one costs this
MAX_STDERR_BYTES = 64 << 10  # kept for the error message; the rest is read and dropped
READ_CHUNK = 64 << 10
_KILLED_WAIT_S = 1.0  # a tool stuck in the kernel may not die at once: not waited on for ever


class ToolTimeout(Exception):
    """The tool had not finished by its deadline: its process group was killed."""


class ToolOutputTooLarge(Exception):
    """The tool printed more than its cap, more than any real output: its group was killed."""


class ToolClosed(Exception):
    """The runner was closed: the run was stopped, or never started."""


@dataclass(frozen=True)
class Finished:
    """A tool that exited by itself: its exit status and what it printed."""

    returncode: int
    stdout: bytes
    stderr: bytes

    def message(self) -> str:
        """Return the first non-empty line of standard error, else of standard output, as one
        printable line (a tool's message can hold any bytes), or ''."""
        for data in (self.stderr, self.stdout):
            for line in data[:MAX_STDERR_BYTES].decode("utf-8", "replace").splitlines():
                if line.strip():
                    return one_line(line)
        return ""


class ToolRunner:
    """Runs tools, each bounded; ``close()`` kills the runs in flight and refuses new ones."""

    def __init__(self) -> None:
        self._active: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        """Kill the runs in flight (their threads reap them); later runs fail at once."""
        with self._lock:
            self._closed = True
            active = list(self._active)
        for proc in active:
            _kill_group(proc)

    def run(self, argv: Sequence[str], timeout: float, *, max_output: int = MAX_OUTPUT_BYTES,
            env: Mapping[str, str] | None = None, stdin: bytes | None = None) -> Finished:
        """Run ``argv`` (never through a shell) to its exit, within ``timeout`` seconds and
        ``max_output`` bytes of standard output, with ``stdin`` as its standard input (None:
        /dev/null); raise the typed errors above otherwise."""
        if self._closed:
            raise ToolClosed
        deadline = time.monotonic() + timeout
        with _input(stdin) as source:
            # Its own session, so that killing its group kills whatever it started as well;
            # and killed if gputop is (SIGKILL included), as nothing gputop starts may outlive it.
            proc = subprocess.Popen(list(argv), stdin=source, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True,
                                    env=None if env is None else dict(env),
                                    preexec_fn=dies_with_this_process())
        try:
            with self._lock:
                self._active.add(proc)
                closed = self._closed  # close() may have come while it started
            if closed:
                raise ToolClosed
            out, err = _read_bounded(proc, deadline, max_output)
            _wait_exit(proc, deadline)
        finally:
            with self._lock:
                self._active.discard(proc)
            _end(proc)  # its exit aside, every way out: kills a tool still running
        if self._closed:
            raise ToolClosed  # killed by close() (it may have exited with what it had)
        return Finished(proc.returncode, out, err)


def run(argv: Sequence[str], timeout: float, *, max_output: int = MAX_OUTPUT_BYTES,
        env: Mapping[str, str] | None = None, stdin: bytes | None = None) -> Finished:
    """Run one tool, bounded (see :meth:`ToolRunner.run`)."""
    return ToolRunner().run(argv, timeout, max_output=max_output, env=env, stdin=stdin)


@contextmanager
def _input(data: bytes | None) -> Iterator[int | IO[bytes]]:
    """Yield what the tool's standard input is: /dev/null, or a file holding ``data`` (a pipe
    would block the writer once its buffer is full, if the tool never reads)."""
    if data is None:
        yield subprocess.DEVNULL
        return
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.seek(0)
        yield fh


def _read_bounded(proc: subprocess.Popen[bytes], deadline: float,
                  max_output: int) -> tuple[bytes, bytes]:
    """Standard output and error until both close, by ``deadline`` (ToolTimeout), holding at
    most ``max_output`` bytes of output (ToolOutputTooLarge past it) and the first
    MAX_STDERR_BYTES of error."""
    assert proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    bufs = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    with selectors.DefaultSelector() as sel:
        for fd in bufs:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise ToolTimeout
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, READ_CHUNK)
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                buf = bufs[key.fd]
                if buf is out:
                    out += chunk
                    if len(out) > max_output:
                        raise ToolOutputTooLarge
                elif len(err) < MAX_STDERR_BYTES:
                    err += chunk[:MAX_STDERR_BYTES - len(err)]
    return bytes(out), bytes(err)


def _wait_exit(proc: subprocess.Popen[bytes], deadline: float) -> None:
    """Wait until the tool has exited, by ``deadline`` (ToolTimeout), without reaping it: while
    its zombie keeps its PID, its process group's ID cannot be reused, so killing the group
    afterwards reaches its children and nothing else."""
    delay = 0.0005
    while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ToolTimeout
        time.sleep(min(delay, left))
        delay = min(2 * delay, 0.05)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Kill the tool's whole group (the tool, if still running, and any child it left), reap
    the tool and close its pipes."""
    _kill_group(proc)
    try:
        proc.wait(timeout=_KILLED_WAIT_S)
    except subprocess.TimeoutExpired:
        pass  # stuck in the kernel: given up on, its pipes closed below
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
