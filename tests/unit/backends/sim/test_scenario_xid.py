"""The xid-thermal scenario (#29): Xids and a thermal slowdown on a deterministic schedule, for
testing alert rules end to end."""

from __future__ import annotations

import pytest

from gputop.backends.base import BackendError, BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.backends.sim.scenario import parse
from gputop.core import budget


@pytest.fixture
def sim():
    backend = SimBackend(BackendOptions(scenario="xid-thermal", sim_speed=1e6))
    backend.open()
    yield backend
    backend.close()


def run(backend, seconds: int, wants=budget.EVERYTHING):
    """One sample a virtual second, from 0 to ``seconds``."""
    out = []
    for _ in range(seconds + 1):
        out.append(backend.sample(wants=wants))
        backend.clock.sleep(1.0)
    return out


def test_each_xid_comes_once_at_its_time_on_its_gpu(sim):
    snaps = run(sim, 45)
    events = [(round(s.time - sim.clock.epoch), e.device, e.code, e.time - sim.clock.epoch)
              for s in snaps for d in s.devices for e in d.xid_events]
    assert events == [(20, 1, 79, 20.0), (40, 3, 13, 40.0)]
    # GPU 1 falls off the bus with its Xid 79 while the job runs there a second before
    assert snaps[19].devices[1].status == "ok" and snaps[19].devices[1].processes
    assert snaps[20].devices[1].status == "lost"
    assert [s.devices[3].xid_last for s in (snaps[39], snaps[40], snaps[45])] == [0, 13, 13]


def test_the_thermal_slowdown_spans_its_window_on_its_gpu(sim):
    snaps = run(sim, 125)
    hot = [round(s.time - sim.clock.epoch) for s in snaps
           if "sw_thermal_slowdown" in (s.devices[2].clock_event_reasons or ())]
    assert hot and hot[0] >= 60 and hot[-1] < 120
    assert not any("sw_thermal_slowdown" in (s.devices[0].clock_event_reasons or ())
                   for s in snaps)
    # it heats up while the heatsink is clogged, and runs slower
    assert snaps[110].devices[2].temperature_c > snaps[55].devices[2].temperature_c + 10
    assert snaps[90].devices[2].clock_sm_mhz < snaps[50].devices[2].clock_sm_mhz


def test_two_runs_are_the_same(sim):
    other = SimBackend(BackendOptions(scenario="xid-thermal", sim_speed=1e6))
    other.open()
    a = [(s.time - sim.clock.epoch, s.devices[2].temperature_c, s.devices[3].xid_events)
         for s in run(sim, 70)]
    b = [(s.time - other.clock.epoch, s.devices[2].temperature_c,
          tuple(e.__class__(e.device, e.code, e.time - other.clock.epoch + sim.clock.epoch)
                for e in s.devices[3].xid_events)) for s in run(other, 70)]
    assert a == b


def test_a_consumer_not_wanting_events_is_not_handed_them(sim):
    snaps = run(sim, 25, wants=budget.wants("utilization_gpu_pct", "processes"))
    assert not any(d.xid_events for s in snaps for d in s.devices)


@pytest.mark.parametrize("extra, message", [
    ({"xid": [{"gpu": 9, "at": 1.0, "code": 79}]}, "outside 0..3"),
    ({"thermal": [{"gpu": 0, "from": 10.0, "until": 5.0}]}, "from < until"),
])
def test_a_bad_schedule_is_refused(extra, message):
    with pytest.raises((ValueError, BackendError), match=message):
        parse({"part": "h100-sxm", "count": 4, **extra}, "t")
