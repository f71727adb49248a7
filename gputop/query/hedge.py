"""Waking on time when one CPU is stalled: the query logger's hedged timers.

On a shared VM the hypervisor takes a virtual CPU away for ~10 ms at a time (steal), and a busy
node can hold one CPU with an interrupt storm. A logger whose timer is armed on that CPU wakes that
late, and at `-lms 10` a 10 ms stall is a lost period. The logger therefore waits for each tick in
two threads whose timers are armed on two different CPUs; the first to wake takes the tick and the
other, finding it taken, waits for the next one. A thread is pinned only for the instant of arming
its timer, so the sampling and writing run wherever the scheduler finds room.
"""

from __future__ import annotations

import os

from gputop.backends.base import Clock


def hedge_cpus(clock: Clock) -> tuple[int, int] | None:
    """Two CPUs to arm the waiters' timers on, or None where a second waiter cannot help: one
    usable CPU, no affinity API (not Linux), or a clock whose waits do not sleep."""
    if not clock.sleeps or not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    # The highest-numbered CPUs: CPU 0 takes the most interrupts, and low numbers are where
    # training launchers tend to pin their workers first.
    return (cpus[-1], cpus[-2]) if len(cpus) >= 2 else None


def arm_here(cpu: int | None, allowed: set[int]) -> bool:
    """Move the calling thread to ``cpu`` and let it go again: the timer of the wait that follows
    is armed on ``cpu``, while the thread stays free to run anywhere in ``allowed`` once woken.
    False when the CPU cannot be used (taken offline, or out of a changed cpuset)."""
    if cpu is None:
        return True
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:
        return False
    try:
        os.sched_setaffinity(0, allowed)
    except OSError:  # the cpuset shrank under us: whatever is left, rather than stay pinned
        os.sched_setaffinity(0, os.sched_getaffinity(os.getpid()))
        return False
    return True
