"""Deterministic dashboards for tests, screenshots and the benchmark: the simulator with a fixed
epoch and host name, driven tick by tick instead of by the sampler's thread."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gputop.backends.base import Backend, BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.backends.sim.clock import SimClock
from gputop.core.model import Snapshot
from gputop.host.load import HostFacts

FIXED_EPOCH = 1763769600.0  # 2025-11-22 00:00:00 UTC
DEMO_HOST = "node-a"
# the host line's figures in tests and screenshots, the same on every machine
DEMO_HOST_FACTS = HostFacts(cpu_pct=38.0, load=(41.52, 40.87, 39.95), mem_used=412 * 2**30,
                            mem_total=2015 * 2**30, swap_used=0, swap_total=0,
                            uptime_s=12 * 86400 + 7 * 3600)


class FixedHost:
    """A host reader that always reads DEMO_HOST_FACTS."""

    def due(self) -> HostFacts:
        return DEMO_HOST_FACTS


def demo_backend(scenario: str, *, seed: int = 0, host: str = DEMO_HOST,
                 epoch: float = FIXED_EPOCH) -> SimBackend:
    """An opened simulator whose clock only moves when ``advance`` moves it."""
    backend = SimBackend(BackendOptions(scenario=scenario, seed=seed, sim_speed=1e6))
    backend.clock = SimClock(1e6, epoch=epoch)
    backend.open()
    backend._info = replace(backend.info(), host=host)  # the same name on every machine
    return backend


def advance(app, seconds: float, interval: float = 1.0) -> None:
    """Sample ``app``'s backend every ``interval`` seconds of virtual time for ``seconds``."""
    clock = app.backend.clock
    if app.host_reader is not None:  # not this machine's load: the same picture everywhere
        app.host_reader = FixedHost()
    steps = max(1, int(round(seconds / interval)))
    for _ in range(steps):
        app.sampler.tick()
        clock.sleep(interval)


def sim_snapshot(scenario: str = "training") -> Snapshot:
    """Return one sample of the simulator's ``scenario`` (seed 1), its backend closed again."""
    backend = SimBackend(BackendOptions(scenario=scenario, seed=1))
    backend.open()
    try:
        return backend.sample()
    finally:
        backend.close()


def recorded_replay(folder: Path, samples: int, interval: float = 1.0,
                    scenario: str = "training") -> Backend:
    """Record ``samples`` of the simulator's ``scenario``, one each ``interval`` seconds, with the
    real recorder into ``folder``/run.csv, and return the replay backend opened on that log."""
    from gputop.backends import open_backend
    from gputop.query.recorder import Recorder

    log = folder / "run.csv"
    sim = demo_backend(scenario)
    with Recorder(str(log)) as rec:
        for _ in range(samples):
            rec.write(sim.sample())
            sim.clock.sleep(interval)
    return open_backend("replay", BackendOptions(replay=str(log)))
