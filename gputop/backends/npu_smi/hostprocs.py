"""Host facts (user, command line, CPU, RSS) for the PIDs npu-smi lists, when they are local."""

from __future__ import annotations

from typing import Any

COMM_LEN = 15  # Linux truncates a process name (comm) to 15 characters


def _same_process(npu_name: str | None, local_name: str) -> bool:
    """Whether npu-smi's name for a PID matches the local process of that PID.

    npu-smi reports host PIDs; inside a container (another PID namespace) the same number may be
    a different local process, and npu-smi then often prints no name at all. Facts are attached
    only when npu-smi's name agrees with the local one, so they are never someone else's.
    """
    if not npu_name:
        return False
    return npu_name[:COMM_LEN] == local_name[:COMM_LEN]


class HostFacts:
    """Keeps psutil.Process objects between refreshes so CPU percentages have an interval."""

    def __init__(self) -> None:
        self._procs: dict[int, Any] = {}

    def collect(self, pids: dict[int, str | None]) -> dict[int, dict[str, object]]:
        try:
            import psutil
        except ImportError:  # psutil is a dependency, but a missing one only costs host facts
            return {}
        out: dict[int, dict[str, object]] = {}
        keep: dict[int, Any] = {}
        for pid, npu_name in pids.items():
            try:
                proc = self._procs.get(pid)
                if proc is None or not proc.is_running():  # is_running also spots a reused PID
                    proc = psutil.Process(pid)
                    known = False
                else:
                    known = True
                with proc.oneshot():
                    local_name = proc.name()
                    if not _same_process(npu_name, local_name):
                        continue
                    cmdline = proc.cmdline()
                    cpu = proc.cpu_percent(None)  # the first call only starts the interval
                    facts: dict[str, object] = {
                        "name": local_name,
                        "user": proc.username(),
                        "command": " ".join(cmdline) if cmdline else None,
                        "cpu_pct": round(cpu, 1) if known else None,
                        "host_memory_mib": round(proc.memory_info().rss / 2**20, 1),
                        "started": proc.create_time(),
                    }
            except (psutil.Error, OSError):
                continue
            keep[pid] = proc
            out[pid] = facts
        self._procs = keep
        return out
