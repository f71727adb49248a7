
import pytest

from gputop.backends.base import BackendError, BackendOptions
from gputop.backends.sim import physics
from gputop.backends.sim.backend import InvalidArgument, SimBackend, busy_share
from gputop.backends.sim.scenario import available
from gputop.sampler import Sampler

EXPECTED_SCENARIOS = {"training", "dataloader-bound", "straggler", "power-capped", "memory-bound",
                      "idle", "mixed", "dense-16", "gpu-lost", "mig", "mig-dense",
                      "multinode-straggler", "idle-rank"}


def sim(scenario="training", **kw) -> SimBackend:
    backend = SimBackend(BackendOptions(scenario=scenario, **kw))
    backend.open()
    return backend


def test_every_issue_scenario_ships_and_loads():
    assert EXPECTED_SCENARIOS <= set(available())
    for name in available():
        snap = sim(name, sim_speed=1000).sample()
        assert snap.backend == "sim" and snap.devices


def test_bus_ids_are_pci_addresses_on_sixteen_gpus():
    """A bus number has two hex digits: the 16th GPU is on the next domain, not bus 0x108."""
    buses = [d.pci_bus_id for d in sim("dense-16").sample().devices]
    assert buses[0] == "00000000:18:00.0" and buses[14] == "00000000:F8:00.0"
    assert buses[15] == "00000001:18:00.0" and len(set(buses)) == 16


def test_a_v100_has_no_mig_mode_an_h100_has_it_off():
    v100, h100 = sim("dense-16").sample().devices[0], sim().sample().devices[0]
    assert (v100.mig_mode, v100.mig_mode_pending) == (None, None)
    assert (h100.mig_mode, h100.mig_mode_pending) == ("disabled", "disabled")


def test_a_sample_wanting_no_processes_or_saturation_has_the_same_counters_and_neither():
    from dataclasses import replace

    from gputop.core.model import Saturation

    full, lean = sim(), sim()
    a, b = full.sample(), lean.sample(wants={"power_draw_w": 0.0})
    assert all(d.processes == () and d.saturation == Saturation() for d in b.devices)
    assert any(d.processes for d in a.devices)
    assert [replace(d, processes=(), saturation=Saturation()) for d in a.devices] == list(b.devices)


def test_out_of_range_limits_are_refused():
    backend = sim()
    with pytest.raises(InvalidArgument, match="outside its range 200-700 W"):
        backend.set_power_limit(0, 150)
    with pytest.raises(InvalidArgument, match="no GPU 9"):
        backend.set_power_limit(9, 300)


def test_a_lower_limit_lowers_the_clock_and_compute_throughput_follows_it():
    def steady(limit, scenario):
        backend = sim(scenario, sim_speed=1000)
        for i in range(8):
            backend.set_power_limit(i, limit)
        Sampler(backend, interval=1.0).run_for(5)
        dev = backend.sample().devices[0]
        return dev, dev.sim["work_rate"]

    full, rate_full = steady(700, "training")
    at80, rate80 = steady(560, "training")
    at67, rate67 = steady(469, "training")
    at50, rate50 = steady(350, "training")
    at40, rate40 = steady(280, "training")
    assert rate_full == pytest.approx(1.0, abs=0.01)
    assert rate80 == pytest.approx(0.95, abs=0.015)  # about 5% slower at 80% of TDP
    assert rate67 == pytest.approx(0.90, abs=0.02)  # about 10% at 67%
    # The knee near 50%: the next 10% of TDP costs far more than the step from 80% to 67% did.
    assert rate50 < rate67 and (rate50 - rate40) > 3 * (rate80 - rate67)
    assert at80.power_draw_w <= 560 + 15 and at80.power_draw_w < full.power_draw_w
    mem_full, mem_rate_full = steady(700, "memory-bound")
    mem_capped, mem_rate = steady(350, "memory-bound")
    assert mem_rate_full - mem_rate < 0.03  # memory-bound work barely moves


def test_power_capped_scenario_reports_the_software_power_cap():
    backend = sim("power-capped", sim_speed=1000)
    Sampler(backend, interval=1.0).run_for(3)
    devs = backend.sample().devices
    assert all(d.power_limit_w == 400 for d in devs)
    assert any("sw_power_cap" in d.clock_event_reasons for d in devs)
    assert all(d.clock_sm_mhz < 1980 for d in devs if "sw_power_cap" in d.clock_event_reasons)


def test_temperature_lags_power_and_energy_integrates_it():
    backend = sim(sim_speed=1000)
    first = backend.sample().devices[0]
    for i in range(8):
        backend.set_power_limit(i, 200)
    backend.clock.sleep(5)
    five = backend.sample().devices[0]
    backend.clock.sleep(295)
    late = backend.sample().devices[0]
    assert five.power_draw_w < 230  # power follows the new limit at once...
    assert late.temperature_c < five.temperature_c < first.temperature_c  # ...temperature lags it
    joules = late.energy_j - five.energy_j
    assert joules == pytest.approx(295 * late.power_draw_w, rel=0.05)


def test_gpu_lost_falls_off_at_30_seconds_and_the_others_keep_sampling():
    backend = sim("gpu-lost", sim_speed=1000)
    assert backend.sample().devices[3].status == "ok"
    backend.clock.sleep(31)
    devs = backend.sample().devices
    assert devs[3].status == "lost" and devs[3].power_draw_w is None and not devs[3].processes
    assert all(d.status == "ok" and d.power_draw_w for i, d in enumerate(devs) if i != 3)


def test_memory_grows_like_a_caching_allocator():
    from gputop.backends.sim.backend import _allocator

    series = [_allocator(62000, t) for t in range(0, 60, 2)]
    assert series[0] == 0 and series[-1] == 62000
    assert all(b >= a for a, b in zip(series, series[1:]))
    assert all(v % 2048 == 0 for v in series if v < 62000)  # whole allocator segments


def test_unknown_scenario_is_a_clear_error():
    with pytest.raises(BackendError, match="unknown scenario 'nope'"):
        sim("nope")


def test_physics_inverse_and_square_wave():
    for f in (0.3, 0.5, 0.85, 0.9, 1.0):
        assert physics.clock_for_power(physics.dynamic_power_fraction(f)) == pytest.approx(f)
    assert busy_share(0, 4, period=4, on=1) == pytest.approx(0.25)
    assert busy_share(0.5, 1.5, period=4, on=1) == pytest.approx(0.5)
