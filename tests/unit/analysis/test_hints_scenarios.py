"""Each simulator scenario produces its hint on the right GPU; `training` produces no warning.

The sampler runs in-process on the SimBackend, 60 virtual seconds at a high sim speed.
"""

from __future__ import annotations

import pytest

from gputop.analysis.pipeline import default_analyzer
from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.sampler import Sampler


def run(scenario: str, seed: int = 0, seconds: float = 60.0):
    backend = SimBackend(BackendOptions(scenario=scenario, seed=seed, sim_speed=1e6))
    backend.open()
    try:
        sampler = Sampler(backend, interval=1.0, analyze=default_analyzer())
        snap = sampler.run_for(seconds)
    finally:
        backend.close()
    return snap, {(h.device, h.code) for h in snap.hints}


@pytest.mark.parametrize("seed", [0, 1])
def test_training_has_no_warning(seed):
    snap, _ = run("training", seed)
    assert [h for h in snap.hints if h.severity in ("warning", "critical")] == []


@pytest.mark.parametrize("seed", [0, 3])
def test_dataloader_bound_is_input_bound_on_every_gpu(seed):
    snap, found = run("dataloader-bound", seed)
    assert {(i, "input-bound") for i in range(8)} <= found
    assert all(h.code == "input-bound" for h in snap.hints)


@pytest.mark.parametrize("seed", [0, 2])
def test_straggler_is_exactly_gpu_5(seed):
    snap, _ = run("straggler", seed)
    stragglers = [h.device for h in snap.hints if h.code == "straggler"]
    assert stragglers == [5]
    # its peers get no warning of their own: they are the victims, not the cause
    assert {h.device for h in snap.hints if h.severity != "info"} == {5}


def test_power_capped_on_every_gpu_with_the_lowered_limit():
    snap, found = run("power-capped")
    capped = [h for h in snap.hints if h.code == "power-capped"]
    assert {h.device for h in capped} == set(range(8))
    assert all(h.severity == "warning" and "400 W" in h.message and "700 W" in h.message
               for h in capped)


def test_memory_bound_on_every_gpu():
    _, found = run("memory-bound")
    assert {(i, "memory-bound") for i in range(8)} <= found


def test_mixed_idle_allocated_on_the_notebook_gpu_only():
    snap, found = run("mixed")
    idle = [h for h in snap.hints if h.code == "idle-allocated"]
    assert [h.device for h in idle] == [7]
    assert "30.0 GiB" in idle[0].message
    assert not any(h.code == "straggler" for h in snap.hints)


def test_gpu_lost_is_device_unhealthy():
    snap, found = run("gpu-lost", seconds=40)
    assert (3, "device-unhealthy") in found


def test_short_history_gives_no_history_hints():
    # three seconds is below MIN_SAMPLES/MIN_SPAN_S: no pattern can be claimed yet
    snap, found = run("dataloader-bound", seconds=3)
    assert found == set()




def test_an_idle_run_longer_than_the_hints_window_is_known_in_full():
    # the window holds one minute of snapshots; the idle run is folded in sample by sample
    snap, _ = run("mixed", seconds=400)
    (idle,) = [h for h in snap.hints if h.code == "idle-allocated"]
    assert idle.message.endswith("with 0% SM activity for at least 7 min")  # the sim has GPM
