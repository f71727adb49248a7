"""Host facts for the processes npu-smi names, read in this process (no npu-smi runs)."""

from __future__ import annotations

import os

import psutil

from gputop.backends.npu_smi.hostprocs import HostFacts


def test_host_facts_only_for_the_same_process() -> None:
    me = psutil.Process()
    facts = HostFacts()
    got = facts.collect({os.getpid(): me.name()})
    assert got[os.getpid()]["user"] == me.username()
    assert got[os.getpid()]["host_memory_mib"] > 0
    assert got[os.getpid()]["cpu_pct"] is None  # no interval yet
    again = facts.collect({os.getpid(): me.name()})
    assert isinstance(again[os.getpid()]["cpu_pct"], float)
    # A PID npu-smi names differently (another PID namespace) or not at all gets nothing.
    assert facts.collect({os.getpid(): "not-this-one"}) == {}
    assert facts.collect({os.getpid(): None}) == {}
