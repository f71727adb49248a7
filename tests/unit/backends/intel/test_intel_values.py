"""The pure rules of the Intel backend: sensors by label, the energy counter, the enforced power
limit, busy shares from idle time, and the processes' shares from xe's cycle counters (on the
kernel's own example text) and i915's engine time (on numbers alone: no citable i915 fdinfo text
was found, tests/fixtures/intel/SOURCES.md)."""

from __future__ import annotations

from gputop.backends.drm.rates import Rates
from gputop.backends.intel import fdinfo, values
from tests.support.amd import FDINFO_GFX
from tests.support.intel import fdinfo_xe

BUS = "0000:03:00.0"


def test_the_kernels_xe_example_is_one_client():
    client = fdinfo.parse_client(fdinfo_xe())
    assert client is not None
    assert (client.pdev, client.client_id) == ("0000:03:00.0", "3")
    assert client.local_bytes == 23992 * 1024  # drm-resident-vram0
    assert client.cycles == {"rcs": 28257900, "bcs": 0, "vcs": 0, "vecs": 0, "ccs": 0}
    assert set(client.total_cycles.values()) == {7655183225}
    assert client.capacity == {"vcs": 2, "vecs": 2, "ccs": 4}
    assert client.engine_ns == {}  # no drm-engine-* time: the capacities are not engines


def test_another_drivers_file_is_no_client():
    assert fdinfo.parse_client(FDINFO_GFX.read_text()) is None  # amdgpu's
    assert fdinfo.parse_client("pos:\t0\nflags:\t02100002\n") is None


def _xe(rcs: int, ccs: int, total: int) -> fdinfo.Client:
    """The kernel example's client, its counters moved to a later reading (numbers only)."""
    client = fdinfo.parse_client(fdinfo_xe())
    assert client is not None
    return fdinfo.Client(client.pdev, client.client_id, client.local_bytes,
                         cycles={**client.cycles, "rcs": rcs, "ccs": ccs},
                         total_cycles={e: total for e in client.total_cycles},
                         capacity=client.capacity)


def test_an_xe_share_is_busy_cycles_over_total_cycles():
    rates = Rates()
    key = (BUS, 42)
    first = fdinfo.usage([_xe(28257900, 0, 7655183225)])
    assert fdinfo.busy_pct(rates, key, first, now_s=1.0) is None  # one reading
    # 250 M of 1000 M cycles on rcs; 800 M on ccs, a class of 4 engines: 200 M each
    later = fdinfo.usage([_xe(28257900 + 250_000_000, 800_000_000, 7655183225 + 10 ** 9)])
    assert fdinfo.busy_pct(rates, key, later, now_s=2.0) == 45.0


def test_two_clients_of_one_process_share_the_gts_clock():
    a = _xe(100, 0, 1000)
    b = _xe(300, 0, 1000)
    use = fdinfo.usage([a, b])
    assert use.cycles["rcs"] == 400 and use.total_cycles["rcs"] == 1000  # not 2000
    assert use.local_bytes == 2 * 23992 * 1024


def test_an_i915_share_is_engine_time_over_wall_time():
    rates = Rates()
    key = (BUS, 7)

    def client(render_ns: int, compute_ns: int) -> fdinfo.Client:
        return fdinfo.Client(BUS, "7", None,
                             engine_ns={"render": render_ns, "compute": compute_ns,
                                        "video": 10 ** 12})

    assert fdinfo.busy_pct(rates, key, fdinfo.usage([client(0, 0)]), now_s=10.0) is None
    # 300 ms of render and 200 ms of compute in one second; video is not counted
    use = fdinfo.usage([client(300_000_000, 200_000_000)])
    assert fdinfo.busy_pct(rates, key, use, now_s=11.0) == 50.0
    assert use.local_bytes is None  # no local0 keys: N/A, not 0


def test_temperatures_by_label():
    assert values.temperatures({"temp1": 55.0}) == values.Temperatures(55.0, None)  # i915
    xe = {"pkg": 54.0, "vram": 56.0, "mctrl": 55.0, "pcie": 58.0, "vram_ch_0": 52.0}
    assert values.temperatures(xe) == values.Temperatures(54.0, 56.0)
    assert values.temperatures({}) == values.Temperatures(None, None)


def test_the_energy_counter_is_the_cards_where_it_counts():
    assert values.energy_counter({"card": 11031745544, "pkg": 19014248107}) \
        == ("card", 11031745544)
    # under kernel 6.16 the B580's card counter reads 0: it never counted
    assert values.energy_counter({"card": 0, "pkg": 29523753173}) == ("pkg", 29523753173)
    assert values.energy_counter({"energy1": 25637161804}) == ("energy1", 25637161804)
    assert values.energy_counter({}) is None


def test_the_enforced_limit_is_the_lowest_printed():
    mw = 1_000_000
    assert values.enforced_limit(55 * mw, None, None) == 55 * mw  # A380: power1_max
    assert values.enforced_limit(None, 190 * mw, 380 * mw) == 190 * mw  # patched B580
    assert values.enforced_limit(None, None, 380 * mw) == 380 * mw  # B580 under 6.16
    assert values.enforced_limit(0, None, None) is None  # 0: not known
    assert values.enforced_limit(None, None, None) is None


def test_busy_from_idle_time_and_the_devices_utilization():
    assert values.busy_from_idle(None) is None
    assert values.busy_from_idle(0.25) == 75.0
    assert values.busy_from_idle(1.02) == 0.0  # idle counted a hair more than the wall time
    assert values.utilization({"gt0-rc": 80.0, "gt1-mc": 0.0}) == 80.0
    assert values.utilization({"gt0-rc": 80.0, "gt1-rc": 40.0, "gt2-mc": 5.0}) == 60.0
    assert values.utilization({"gt0": 30.0}) == 30.0  # i915's RC6
    assert values.utilization({"gt0-rc": None, "gt1-mc": 10.0}) is None


def test_fan_percent_needs_a_maximum():
    assert values.fan_percent(1116, 2160) == 51.7
    assert values.fan_percent(418, None) is None
    assert values.fan_percent(None, 2160) is None


def test_a_name_from_the_pci_id():
    assert values.product_name((0x8086, 0x56A5)) == "Intel GPU 8086:56A5"
    assert values.product_name(None) == "Intel GPU"
