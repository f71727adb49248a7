"""Running npu-smi: a subprocess per query, always with a timeout, failures as typed errors.

Its output is untrusted and every run is bounded by the shared tool runner (gputop/core/toolrun.py):
past ``MAX_OUTPUT_BYTES`` the query's whole process group is killed and the run fails with
:class:`NpuSmiOutputTooLarge`, so a tool that never stops printing costs a few MiB, not
gigabytes; on every way out of :meth:`Runner.run` (a timeout, too much output, ``close()`` from
another thread, an exception: a signal handler's included) its whole process group is killed.
"""

from __future__ import annotations

import os
import shutil

from gputop.backends.base import BackendError, BackendUnavailable
from gputop.core import toolrun
from gputop.core.toolrun import MAX_OUTPUT_BYTES

DEFAULT_TIMEOUT_S = 15.0  # a full `npu-smi info` on 8 NPUs can take several seconds
TIMEOUT_ENV = "GPUTOP_NPU_SMI_TIMEOUT"


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
    """``GPUTOP_NPU_SMI_TIMEOUT``, checked against its documented range (gputop.core.bounds)."""
    from gputop.core.bounds import NPU_SMI_TIMEOUT

    assert NPU_SMI_TIMEOUT.name == TIMEOUT_ENV
    return float(NPU_SMI_TIMEOUT.from_env(os.environ, default))


class Runner:
    """Runs ``npu-smi ARGS…`` and returns its standard output as text."""

    def __init__(self, executable: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.executable = executable
        self.timeout_s = timeout_s
        self._tools = toolrun.ToolRunner()

    def close(self) -> None:
        """Kill the queries in flight; later runs fail at once."""
        self._tools.close()

    def run(self, *args: str, timeout_s: float | None = None) -> str:
        timeout = self.timeout_s if timeout_s is None else timeout_s
        what = " ".join(("npu-smi", *args))
        try:
            done = self._tools.run([self.executable, *args], timeout,
                                   env={**os.environ, "LC_ALL": "C"})
        except FileNotFoundError:
            raise NpuSmiNotFound(f"npu-smi: {self.executable} no longer exists") from None
        except OSError as exc:
            raise NpuSmiError(f"could not run {self.executable}: {exc.strerror or exc}") from None
        except toolrun.ToolTimeout:
            raise NpuSmiTimeout(f"`{what}` did not answer within {timeout:g} s") from None
        except toolrun.ToolOutputTooLarge:
            raise NpuSmiOutputTooLarge(
                f"`{what}` printed more than {MAX_OUTPUT_BYTES >> 20} MiB, more than any real "
                "output: stopped it") from None
        except toolrun.ToolClosed:
            raise NpuSmiError("the npu-smi backend is closed") from None
        if done.returncode != 0:
            raise NpuSmiExitError(
                f"`{what}` exited with status {done.returncode}: {done.message() or 'no message'}",
                done.returncode)
        return done.stdout.decode("utf-8", "replace")
