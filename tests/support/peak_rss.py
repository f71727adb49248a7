"""Run `gputop ARGS` under a fresh parent that reports the peak RSS of its children.

The parent's only child is gputop, so RUSAGE_CHILDREN's ru_maxrss is gputop's own peak (or that
of a child of its, which rolls up when gputop reaps it). An address-space limit of 2 GiB is a belt:
without the bounds under test, gputop would take gigabytes; it stops there instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.support import paths

ROOT = paths.ROOT
LIMIT_AS = 2 << 30
_PARENT = f"""
import resource, subprocess, sys
limit = lambda: resource.setrlimit(resource.RLIMIT_AS, ({LIMIT_AS}, {LIMIT_AS}))
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True, preexec_fn=limit)
sys.stdout.write(proc.stderr)
print(proc.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_run(*args: str, env: dict[str, str] | None = None,
             timeout: float = 120) -> tuple[int, int, str]:
    """(exit status, peak RSS in KiB, stderr) of `gputop ARGS`. Past ``timeout`` seconds the
    parent and gputop, one process group, are killed and TimeoutExpired raised."""
    proc = subprocess.Popen([sys.executable, "-c", _PARENT, sys.executable, "-m", "gputop", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.returncode is None:  # a hung gputop: no process of the test outlives it
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    *stderr, last = out.splitlines()
    code, peak = map(int, last.split())
    return code, peak, "\n".join(stderr)
