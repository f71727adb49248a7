"""Host facts (user, command line, CPU, RSS) for the PIDs npu-smi lists, when they are local.

The psutil work is the shared per-pid cache in gputop/host/processes.py; what is particular to
npu-smi is deciding whether a PID it reports is the local process of that number at all.
"""

from __future__ import annotations

from dataclasses import fields

from gputop.host.processes import NO_FACTS, HostProcesses

COMM_LEN = 15  # Linux truncates a process name (comm) to 15 characters


def _same_process(npu_name: str | None, local_name: str | None) -> bool:
    """Whether npu-smi's name for a PID matches the local process of that PID.

    npu-smi reports host PIDs; inside a container (another PID namespace) the same number may be
    a different local process, and npu-smi then often prints no name at all. Facts are attached
    only when npu-smi's name agrees with the local one, so they are never someone else's.
    """
    if not npu_name or not local_name:
        return False
    return npu_name[:COMM_LEN] == local_name[:COMM_LEN]


class HostFacts:
    """Facts for the PIDs of one npu-smi table, from one long-lived HostProcesses cache."""

    def __init__(self) -> None:
        self._host = HostProcesses()

    def collect(self, pids: dict[int, str | None]) -> dict[int, dict[str, object]]:
        out: dict[int, dict[str, object]] = {}
        for pid, npu_name in pids.items():
            facts = self._host.lookup(pid)
            if facts is NO_FACTS or not _same_process(npu_name, facts.name):
                continue
            out[pid] = {f.name: getattr(facts, f.name) for f in fields(facts)}
        self._host.prune(pids)
        return out
