"""The call budget's arithmetic: wants merged at the shortest period, and slow facts never read
more often than their floor. tests/e2e/test_call_budget.py counts the calls themselves."""

from __future__ import annotations

from gputop.backends.nvml import reads
from gputop.core import budget


def test_merge_takes_every_attribute_at_the_shortest_period():
    a = budget.wants("power_draw_w", "temperature_c", every=5.0)
    b = budget.wants("temperature_c")
    assert budget.merge([a, b]) == {"power_draw_w": 5.0, "temperature_c": 0.0}
    assert budget.merge([a, None]) is budget.EVERYTHING
    assert budget.merge([]) is budget.EVERYTHING


def test_slow_facts_are_never_read_more_often_than_their_floor():
    due = reads.periods(budget.wants("power_limit_w", "serial", "saturation"))
    assert due["limit"] == reads.SLOW_REFRESH_S
    assert due["serial"] == reads.ONCE
    assert due["mig"] == reads.SLOW_REFRESH_S  # GPM needs to know whether MIG is on
    assert reads.fresh(due, {"limit": 0.0, "mig": 0.0, "serial": 0.0}, 9.0) == []
    assert reads.fresh(due, {"limit": 0.0, "mig": 0.0, "serial": 0.0}, 10.0) == ["limit", "mig"]


def test_the_link_counters_are_read_only_when_asked_for_and_bring_gpm_along():
    due = reads.periods(budget.wants(budget.LINK_RATES))
    assert due[budget.LINK_RATES] == 0.0
    # a GPU with GPM gives the rates from its reading, as fresh as asked
    assert due["saturation"] == 0.0 and "mig" in due
    assert reads.periods(budget.wants("saturation", budget.LINK_RATES))["saturation"] == 0.0
    assert budget.LINK_RATES not in reads.periods(budget.wants("saturation"))
    # everything (snapshot --json, the agent, an exporter) does not pay the 20 ms PCIe window
    assert budget.LINK_RATES not in reads.periods(budget.EVERYTHING)
    assert "saturation" in reads.periods(budget.EVERYTHING)


def test_the_wide_cards_read_the_modes_on_the_slow_schedule_and_the_dashboard_not_at_all():
    """Bus-Id, persistence, compute and MIG mode show on wide cards and in the saturation panel
    (#27); on NVML the modes cost two calls per GPU every 30 s while one of those is on screen,
    nothing per tick, and nothing at all for the dashboard's plain cards."""
    from gputop.backends.base import BackendOptions
    from gputop.backends.nvml.backend import NvmlBackend
    from gputop.core.budget import merge
    from gputop.tui.text.wants import DASHBOARD, WIDE_CARDS
    from tests.support.fake_pynvml import FakeNvml, ManualClock, h100

    assert "persistence" not in reads.periods(DASHBOARD)
    wide = merge([DASHBOARD, WIDE_CARDS])
    due = reads.periods(wide)
    assert due["persistence"] == due["compute_mode"] == 30.0
    assert due["mig"] == reads.SLOW_REFRESH_S  # as before: the process table's MIG read
    clock = ManualClock()
    nv = FakeNvml([h100(0, []), h100(1, [])], clock=clock.wall)
    with NvmlBackend(BackendOptions(), nvml=nv, clock=clock) as backend:
        dev = backend.sample(wants=wide).devices[0]
        for _ in range(30):
            clock.advance(1.0)
            backend.sample(wants=wide)
    assert (dev.pci_bus_id, dev.persistence_mode, dev.compute_mode, dev.mig_mode) == (
        "00000000:18:00.0", True, "Default", "disabled")
    assert nv.count("nvmlDeviceGetPersistenceMode") == nv.count("nvmlDeviceGetComputeMode") == 4
    assert nv.count("nvmlDeviceGetMigMode") == 8  # every 10 s, as without the facts
