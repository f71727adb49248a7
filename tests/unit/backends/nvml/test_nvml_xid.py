"""Xid errors through NVML's events (gputop/backends/nvml/xid.py), on the fake pynvml: the last
Xid reaches the snapshot and the exporter's DCGM_FI_DEV_XID_ERRORS; a GPU without events has
none (no series, never a made-up 0)."""

from __future__ import annotations

import pytest

from gputop.backends.base import BackendOptions
from gputop.backends.nvml import backend as nvml_backend
from gputop.backends.nvml.backend import NvmlBackend
from gputop.core import budget
from gputop.core.model import XidEvent
from gputop.exporter import collect, exposition, own
from gputop.tui.text.wants import DASHBOARD
from tests.support.fake_pynvml import FakeNvml, ManualClock, node

NOT_SUPPORTED = 3


@pytest.fixture
def gpus():
    clock = ManualClock()
    nv = FakeNvml(node(4), clock=clock.wall)
    backend = NvmlBackend(BackendOptions(), nvml=nv, clock=clock)
    backend.open()
    yield backend, nv, clock
    backend.close()


def xid_lines(snap) -> dict[str, str]:
    body = exposition.render(collect.families(snap, own.Options(), "t")).decode()
    return {line.split('gpu="', 1)[1].split('"', 1)[0]: line.rsplit(" ", 1)[1]
            for line in body.splitlines() if line.startswith("DCGM_FI_DEV_XID_ERRORS{")}


def test_an_injected_xid_shows_in_the_snapshot_and_the_exporter(gpus):
    backend, nv, clock = gpus
    assert [d.xid_last for d in backend.sample().devices] == [0, 0, 0, 0]  # none yet
    nv.xid(2, 79)
    clock.advance(1)
    snap = backend.sample()
    assert [d.xid_last for d in snap.devices] == [0, 0, 79, 0]
    assert xid_lines(snap) == {"0": "0.0", "1": "0.0", "2": "79.0", "3": "0.0"}
    nv.xid(2, 48)
    nv.xid(0, 13)
    clock.advance(1)
    assert [d.xid_last for d in backend.sample().devices] == [13, 0, 48, 0]
    clock.advance(1)  # the last one stays, as dcgm-exporter's gauge does
    assert [d.xid_last for d in backend.sample().devices] == [13, 0, 48, 0]


def test_one_event_set_for_all_gpus_polled_without_waiting_and_freed_at_close():
    clock = ManualClock()
    nv = FakeNvml(node(4), clock=clock.wall)
    backend = NvmlBackend(BackendOptions(), nvml=nv, clock=clock)
    backend.open()
    for _ in range(3):
        backend.sample()
        clock.advance(1)
    assert len(nv.event_sets) == 1 and set(nv.event_sets[0].masks) == {0, 1, 2, 3}
    assert nv.count("nvmlDeviceRegisterEvents") == 4  # once each, not per tick
    assert nv.count("nvmlEventSetWait_v2") == 3  # one poll a tick: nothing was waiting
    backend.close()
    assert nv.event_sets[0].freed


def test_a_gpu_that_gives_no_events_reports_none_and_is_not_asked_again():
    clock = ManualClock()
    gpus = node(3)
    gpus[1].xid_events = False
    nv = FakeNvml(gpus, clock=clock.wall)
    backend = NvmlBackend(BackendOptions(), nvml=nv, clock=clock)
    backend.open()
    try:
        snap = backend.sample()
        assert [d.xid_last for d in snap.devices] == [0, None, 0]
        assert set(xid_lines(snap)) == {"0", "2"}  # absent, not 0
        for _ in range(3):
            clock.advance(1)
            backend.sample()
        assert nv.count("nvmlDeviceRegisterEvents") == 3
    finally:
        backend.close()


def test_a_driver_without_event_sets_reports_none_everywhere_and_stops_asking():
    clock = ManualClock()
    nv = FakeNvml(node(2), clock=clock.wall)
    nv.fail("nvmlEventSetCreate", NOT_SUPPORTED)
    backend = NvmlBackend(BackendOptions(), nvml=nv, clock=clock)
    backend.open()
    try:
        for _ in range(3):
            assert [d.xid_last for d in backend.sample().devices] == [None, None]
            clock.advance(1)
        assert nv.count("nvmlEventSetCreate") == 1
        assert nv.count("nvmlEventSetWait_v2") == 0
    finally:
        backend.close()


def test_a_reinit_frees_the_set_makes_a_new_one_and_keeps_the_last_xid(gpus):
    backend, nv, clock = gpus
    nv.xid(3, 79)
    backend.sample()  # registered after the event: the driver did not queue it for us
    nv.xid(3, 74)
    clock.advance(1)
    assert backend.sample().devices[3].xid_last == 74
    nv.lose(3)
    clock.advance(1)
    assert backend.sample().devices[3].xid_last is None  # a lost GPU reports nothing
    nv.recover(3)
    clock.advance(nvml_backend.RETRY_FIRST_S)
    snap = backend.sample()
    assert snap.devices[3].status == "ok" and snap.devices[3].xid_last == 74
    assert nv.event_sets[0].freed and not nv.event_sets[1].freed
    nv.xid(3, 31)
    clock.advance(1)
    assert backend.sample().devices[3].xid_last == 31


def test_a_consumer_that_shows_no_xid_makes_no_event_call(gpus):
    backend, nv, clock = gpus
    cards_only = budget.wants("utilization_gpu_pct", "memory_used_mib", "power_draw_w")
    for _ in range(3):
        assert all(d.xid_last is None for d in backend.sample(wants=cards_only).devices)
        clock.advance(1)
    assert nv.count("nvmlEventSetCreate") == 0 and nv.count("nvmlEventSetWait_v2") == 0


def test_the_dashboard_drains_xid_events_once_a_tick_for_the_whole_node(gpus):
    """The dashboard ties each Xid to the processes on its GPU as it comes (#29): it drains the
    events on every tick, with one call for the node however many GPUs it has."""
    backend, nv, clock = gpus
    for _ in range(61):
        backend.sample(wants=DASHBOARD)
        clock.advance(1)
    assert nv.count("nvmlEventSetWait_v2") == 61


def test_each_xid_reaches_one_sample_as_an_event_with_its_gpu_code_and_time(gpus):
    """#29: every Xid drained is an event of the next sample, once, stamped with the time it
    was drained; two on one GPU between samples are both there, oldest first."""
    backend, nv, clock = gpus
    assert all(d.xid_events == () for d in backend.sample().devices)
    nv.xid(2, 79)
    nv.xid(0, 13)
    nv.xid(2, 48)
    clock.advance(1)
    snap = backend.sample()
    assert snap.devices[2].xid_events == (XidEvent(2, 79, snap.time), XidEvent(2, 48, snap.time))
    assert snap.devices[0].xid_events == (XidEvent(0, 13, snap.time),)
    assert snap.devices[1].xid_events == snap.devices[3].xid_events == ()
    clock.advance(1)
    assert all(d.xid_events == () for d in backend.sample().devices)  # each once
    assert backend.sample().devices[2].xid_last == 48  # the gauge still holds the last


def test_the_xid_that_takes_a_gpu_down_comes_with_the_lost_device(gpus):
    backend, nv, clock = gpus
    backend.sample()
    nv.xid(1, 79)
    nv.lose(1)
    clock.advance(1)
    dev = backend.sample().devices[1]
    assert dev.status == "lost" and [e.code for e in dev.xid_events] == [79]


def test_a_consumer_wanting_only_the_last_xid_keeps_no_events_waiting(gpus):
    backend, nv, clock = gpus
    last_only = budget.wants("xid_last")
    backend.sample(wants=last_only)
    nv.xid(3, 31)
    clock.advance(1)
    assert backend.sample(wants=last_only).devices[3].xid_events == ()
    clock.advance(1)  # an events consumer arriving later is not handed the stale one
    assert backend.sample().devices[3].xid_events == ()
