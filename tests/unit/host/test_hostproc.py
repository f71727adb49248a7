"""Host facts per tick: one read of /proc/PID/stat per process."""

from __future__ import annotations

import builtins
import os

from gputop.host.processes import HostProcesses


def test_a_steady_tick_reads_one_proc_file_per_process(monkeypatch) -> None:
    host = HostProcesses()
    host.lookup(os.getpid())  # first sight: the static facts, with psutil
    opened: list[str] = []
    real_open = builtins.open

    def counting_open(path, *args, **kwargs):
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    facts = host.lookup(os.getpid())
    assert opened == [f"/proc/{os.getpid()}/stat"]
    assert facts.host_memory_mib is not None and facts.cpu_pct is not None


