"""The C fake of libnvidia-ml (../shared/tools/fakenvml): built into a temporary folder, with real
dummy processes placed on its GPUs, so that the real nvidia-ml-py binding - and gputop, gpustat,
nvitop through it - run unmodified and ``FAKENVML_TRACE`` counts every NVML call they make.

Used by the call-budget tests and by bench/calls.py and bench/peers.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.support import paths

ROOT = paths.ROOT
# Relative to the repository, checked out beside ../shared (a worktree one level deeper sees
# it as ../../shared); $FAKENVML_DIR names another folder.
PLACES = (Path("..") / "shared" / "tools" / "fakenvml",
          Path("..") / ".." / "shared" / "tools" / "fakenvml")


def source() -> Path:
    chosen = os.environ.get("FAKENVML_DIR")
    places = [Path(chosen)] if chosen else [ROOT / p for p in PLACES]
    for place in places:
        if (place / "fakenvml.c").is_file():
            return place / "fakenvml.c"
    return places[0] / "fakenvml.c"


def available() -> str | None:
    """Why the fake cannot be built here, or None."""
    if not source().is_file():
        return f"{source()} not found (set FAKENVML_DIR to the fakenvml folder)"
    if shutil.which(os.environ.get("CC", "gcc")) is None:
        return "no C compiler (gcc)"
    return None


def build(folder: Path) -> Path:
    """Compile the fake into ``folder`` as libnvidia-ml.so.1 (what pynvml loads); the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([os.environ.get("CC", "gcc"), "-shared", "-fPIC", "-O2", "-fvisibility=hidden",
                    "-Wl,-soname,libnvidia-ml.so.1", "-o", str(folder / "libnvidia-ml.so.1"),
                    str(source().resolve()), "-lm", "-lpthread"], check=True)
    return folder


class Node:
    """A fake node: ``gpus`` GPUs with ``procs_per_gpu`` real processes each, ``sleep`` unless
    ``argv`` says what to run (``{rank}`` in it: the process's number from 0) in ``cwd``.

    Use as a context manager; the processes are killed by PID at exit."""

    def __init__(self, folder: Path, gpus: int = 8, procs_per_gpu: int = 4,
                 extra: str = "", argv: tuple[str, ...] = ("sleep", "3600"),
                 cwd: Path | None = None) -> None:
        self.argv, self.cwd = argv, cwd
        self.folder = folder
        self.gpus = gpus
        self.procs_per_gpu = procs_per_gpu
        self.extra = extra
        self.pids: list[int] = []
        self._procs: list[subprocess.Popen] = []
        self.config = folder / f"node-{gpus}x{procs_per_gpu}.conf"

    def __enter__(self) -> Node:
        lines = [f"gpu_count={self.gpus}"]
        for g in range(self.gpus):
            pids = []
            for i in range(self.procs_per_gpu):
                rank = g * self.procs_per_gpu + i
                p = subprocess.Popen([a.format(rank=rank) for a in self.argv],
                                     stdin=subprocess.DEVNULL, cwd=self.cwd)
                self._procs.append(p)
                pids.append(f"{p.pid}:{6 + (g * self.procs_per_gpu + i) * 7 % 13}G")
            lines.append(f"gpu.{g}.procs={','.join(pids)}")
        self.pids = [p.pid for p in self._procs]
        self.config.write_text("\n".join(lines) + "\n" + self.extra)
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self._procs:
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self._procs:
            p.wait()

    def env(self, trace: Path | None = None, **more: str) -> dict[str, str]:
        env = dict(os.environ, LD_LIBRARY_PATH=str(self.folder), FAKENVML_CONFIG=str(self.config))
        if trace is not None:
            env["FAKENVML_TRACE"] = str(trace)
        env.update(more)
        return env


def read_trace(path: Path) -> Counter:
    """FAKENVML_TRACE's ``PID FUNCTION CALLS`` lines, summed per function."""
    calls: Counter = Counter()
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3:
                calls[parts[1]] += int(parts[2])
    return calls


# Run in a child process with the fake loaded: open the NVML backend, take TICKS samples one
# virtual second apart with the given wants, exit normally (the trace is written at exit).
TICKS_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from gputop.backends.base import BackendOptions
from gputop.backends.nvml.backend import NvmlBackend

class Clock:
    sleeps = False
    t = 1000.0
    def monotonic(self): return self.t
    def wall(self): return 1.7e9 + self.t
    def sleep(self, s): self.t += max(0.0, s)
    def wait(self, event, s): self.t += max(0.0, s); return event.is_set()

wants = json.loads(sys.argv[3])
clock = Clock()
backend = NvmlBackend(BackendOptions(), clock=clock)
backend.open()
for _ in range(int(sys.argv[2])):
    snap = backend.sample(wants=wants)
    clock.t += 1.0
print(json.dumps([len(d.processes) for d in snap.devices]))
backend.close()
"""


def calls_per_tick(node: Node, wants, ticks: tuple[int, int] = (10, 40)) -> tuple[float, Counter]:
    """NVML calls per tick in the steady state: two runs of ``ticks`` samples, differenced, so
    opening (handles, static facts) is left out; slow and 5 s reads are counted at their rate.
    Returns (calls per tick, calls per function over the difference)."""
    import json

    totals = []
    for n in ticks:
        trace = node.folder / f"trace-{os.getpid()}-{n}"
        trace.unlink(missing_ok=True)
        subprocess.run([sys.executable, "-c", TICKS_SCRIPT, str(ROOT), str(n), json.dumps(wants)],
                       env=node.env(trace), check=True, capture_output=True)
        totals.append(read_trace(trace))
        trace.unlink()
    diff = totals[1].copy()
    diff.subtract(totals[0])
    diff = Counter({k: v for k, v in diff.items() if v})
    return sum(diff.values()) / (ticks[1] - ticks[0]), diff
