"""Running npu-smi: a subprocess per query, always with a timeout, failures as typed errors.

Its output is untrusted and read in a bounded stream: past ``MAX_OUTPUT_BYTES`` the query's whole
process group is killed and the run fails with :class:`NpuSmiOutputTooLarge`, so a tool that
never stops printing costs a few MiB, not gigabytes. Every query runs in its own process group,
which is killed on every way out of :meth:`Runner.run`: success aside, a timeout, too much
output, ``close()`` from another thread, or an exception (a signal handler's included).
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import threading
import time

from gputop.backends.base import BackendError, BackendUnavailable

DEFAULT_TIMEOUT_S = 15.0  # a full `npu-smi info` on 8 NPUs can take several seconds
TIMEOUT_ENV = "GPUTOP_NPU_SMI_TIMEOUT"
MAX_OUTPUT_BYTES = 4 << 20  # far above any real table; a runaway tool must not eat memory
MAX_STDERR_BYTES = 64 << 10  # kept for the error message; the rest is read and dropped
READ_CHUNK = 64 << 10


class NpuSmiError(BackendError):
    """npu-smi could not be run, failed, or did not answer."""


class NpuSmiNotFound(BackendUnavailable):
    """No npu-smi executable on PATH (or at the path given)."""


class NpuSmiTimeout(NpuSmiError):
    pass


class NpuSmiOutputTooLarge(NpuSmiError):
    """npu-smi printed more than any real output holds: it was stopped."""


class NpuSmiExitError(NpuSmiError):
    def __init__(self, message: str, returncode: int) -> None:
        super().__init__(message)
        self.returncode = returncode


def find_npu_smi(path: str | None) -> str:
    """The executable to run: ``path`` if given (a name is looked up on PATH), else PATH's."""
    if path:
        found = shutil.which(path) if os.sep not in path else path
        if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
            raise NpuSmiNotFound(f"npu-smi: {path} is not an executable file")
        return found
    found = shutil.which("npu-smi")
    if not found:
        raise NpuSmiNotFound("npu-smi was not found on PATH (give its location with --npu-smi PATH)")
    return found


def timeout_from_env(default: float = DEFAULT_TIMEOUT_S) -> float:
    """``GPUTOP_NPU_SMI_TIMEOUT``, checked against its documented range (gputop.bounds)."""
    from gputop.bounds import NPU_SMI_TIMEOUT

    assert NPU_SMI_TIMEOUT.name == TIMEOUT_ENV
    return float(NPU_SMI_TIMEOUT.from_env(os.environ, default))


def _first_line(data: bytes) -> str:
    for line in data.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


class Runner:
    """Runs ``npu-smi ARGS…`` and returns its standard output as text."""

    def __init__(self, executable: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.executable = executable
        self.timeout_s = timeout_s
        self._active: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        """Kill the queries in flight; later runs fail at once."""
        with self._lock:
            self._closed = True
            active = list(self._active)
        for proc in active:
            _kill(proc, reap=False)  # the thread that started it reaps it

    def run(self, *args: str, timeout_s: float | None = None) -> str:
        timeout = self.timeout_s if timeout_s is None else timeout_s
        what = " ".join(("npu-smi", *args))
        if self._closed:
            raise NpuSmiError("the npu-smi backend is closed")
        try:
            # Its own session, so that a timeout can kill whatever npu-smi started as well.
            proc = subprocess.Popen(
                [self.executable, *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env={**os.environ, "LC_ALL": "C"},
            )
        except FileNotFoundError:
            raise NpuSmiNotFound(f"npu-smi: {self.executable} no longer exists") from None
        except OSError as exc:
            raise NpuSmiError(f"could not run {self.executable}: {exc.strerror or exc}") from None
        with self._lock:
            self._active.add(proc)
        try:
            out, err = _read_bounded(proc, time.monotonic() + timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise NpuSmiTimeout(f"`{what}` did not answer within {timeout:g} s") from None
        except _TooMuch:
            _kill(proc)
            raise NpuSmiOutputTooLarge(
                f"`{what}` printed more than {MAX_OUTPUT_BYTES >> 20} MiB, more than any real "
                "output: stopped it") from None
        except (ValueError, OSError):  # close() shut the pipes under us
            _kill(proc)
            raise NpuSmiError("the npu-smi backend is closed") from None
        except BaseException:  # a signal handler's exception, an interrupt: no orphan
            _kill(proc)
            raise
        finally:
            with self._lock:
                self._active.discard(proc)
        if self._closed:
            raise NpuSmiError("the npu-smi backend is closed")
        if proc.returncode != 0:
            detail = _first_line(err) or _first_line(out) or "no message"
            raise NpuSmiExitError(
                f"`{what}` exited with status {proc.returncode}: {detail}", proc.returncode
            )
        return out.decode("utf-8", "replace")


class _TooMuch(Exception):
    pass


def _read_bounded(proc: subprocess.Popen[bytes], deadline: float) -> tuple[bytes, bytes]:
    """stdout and stderr until both close and the process exits, by ``deadline``
    (TimeoutExpired), holding at most MAX_OUTPUT_BYTES of stdout (_TooMuch past it) and the
    first MAX_STDERR_BYTES of stderr."""
    assert proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    bufs = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    with selectors.DefaultSelector() as sel:
        for fd in bufs:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, 0)
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, READ_CHUNK)
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                buf = bufs[key.fd]
                if buf is out:
                    out += chunk
                    if len(out) > MAX_OUTPUT_BYTES:
                        raise _TooMuch
                elif len(err) < MAX_STDERR_BYTES:
                    err += chunk[:MAX_STDERR_BYTES - len(err)]
    proc.wait(max(0.0, deadline - time.monotonic()))
    proc.stdout.close()
    proc.stderr.close()
    return bytes(out), bytes(err)


def _kill(proc: subprocess.Popen[bytes], reap: bool = True) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if not reap:
        return
    try:
        # A process stuck in the driver (uninterruptible sleep) may not die at once: give up on
        # it after a moment rather than hang the caller; its pipes are closed either way.
        proc.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
        pass
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
