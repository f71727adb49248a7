"""Running a vendor's management tool (npu-smi, amd-smi): a subprocess per query, always bounded,
its failures typed errors worded once here as one line naming the tool and the query.

Its output is untrusted and every run is bounded by the shared tool runner (gputop/core/toolrun.py):
past ``MAX_OUTPUT_BYTES`` the query's whole process group is killed and the run fails with
:class:`SmiOutputTooLarge`, so a tool that never stops printing costs a few MiB, not gigabytes;
on every way out of :meth:`SmiRunner.run` (a timeout, too much output, ``close()`` from another
thread, an exception: a signal handler's included) its whole process group is killed.
"""

from __future__ import annotations

import os
import shutil

from gputop.backends.base import BackendError, BackendUnavailable
from gputop.core import toolrun
from gputop.core.toolrun import MAX_OUTPUT_BYTES


class SmiError(BackendError):
    """The tool could not be run, failed, or did not answer."""


class SmiNotFound(BackendUnavailable):
    """No such executable on PATH (or at the path given)."""


class SmiTimeout(SmiError):
    pass


class SmiOutputTooLarge(SmiError):
    """The tool printed more than any real output holds: it was stopped."""


class SmiExitError(SmiError):
    def __init__(self, message: str, returncode: int) -> None:
        super().__init__(message)
        self.returncode = returncode


def find_smi(tool: str, path: str | None, option: str | None = None) -> str:
    """Return the executable to run: ``path`` if given (a name is looked up on PATH), else
    ``tool`` on PATH; ``option`` names the command-line option that gives its location."""
    if path:
        found = shutil.which(path) if os.sep not in path else path
        if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
            raise SmiNotFound(f"{tool}: {path} is not an executable file")
        return found
    found = shutil.which(tool)
    if not found:
        hint = f" (give its location with {option} PATH)" if option else ""
        raise SmiNotFound(f"{tool} was not found on PATH{hint}")
    return found


class SmiRunner:
    """Runs ``TOOL ARGS…`` and returns its standard output as text."""

    def __init__(self, tool: str, executable: str, timeout_s: float) -> None:
        self.tool = tool
        self.executable = executable
        self.timeout_s = timeout_s
        self._tools = toolrun.ToolRunner()

    def close(self) -> None:
        """Kill the queries in flight; later runs fail at once."""
        self._tools.close()

    def run(self, *args: str, timeout_s: float | None = None) -> str:
        """Run one query to its end, bounded; raise one of the errors above otherwise."""
        timeout = self.timeout_s if timeout_s is None else timeout_s
        what = " ".join((self.tool, *args))
        try:
            done = self._tools.run([self.executable, *args], timeout,
                                   env={**os.environ, "LC_ALL": "C"})
        except FileNotFoundError:
            raise SmiNotFound(f"{self.tool}: {self.executable} no longer exists") from None
        except OSError as exc:
            raise SmiError(f"could not run {self.executable}: {exc.strerror or exc}") from None
        except toolrun.ToolTimeout:
            raise SmiTimeout(f"`{what}` did not answer within {timeout:g} s") from None
        except toolrun.ToolOutputTooLarge:
            raise SmiOutputTooLarge(
                f"`{what}` printed more than {MAX_OUTPUT_BYTES >> 20} MiB, more than any real "
                "output: stopped it") from None
        except toolrun.ToolClosed:
            raise SmiError(f"the {self.tool} backend is closed") from None
        if done.returncode != 0:
            raise SmiExitError(
                f"`{what}` exited with status {done.returncode}: {done.message() or 'no message'}",
                done.returncode)
        return done.stdout.decode("utf-8", "replace")
