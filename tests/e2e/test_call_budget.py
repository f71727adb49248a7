"""The call budget, counted on the real nvidia-ml-py binding over the C fake of libnvidia-ml
(tests/support/cfake.py): each consumer's tick makes the NVML calls its declared wants need, no more.
If a read creeps back into a tick these fail with the per-function counts."""

from __future__ import annotations

import pytest

from gputop.backends.nvml import reads
from gputop.core import budget
from gputop.formats.query_fields import parse_field_list, query_wants
from gputop.tui.widgets.dashboard import WANTS as DASHBOARD
from tests.support import cfake

GPUS = 8


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    why = cfake.available()
    if why is not None:
        pytest.skip(why)
    folder = cfake.build(tmp_path_factory.mktemp("fakenvml"))
    with cfake.Node(folder, gpus=GPUS, procs_per_gpu=4) as n:
        yield n


# The health hints' reads (#27): counters that change rarely, which the dashboard asks for every
# 30 s; they stand outside its per-tick budget, bounded on their own.
HEALTH_CALLS = ("nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetRemappedRows",
                "nvmlDeviceGetRetiredPagesPendingStatus", "nvmlDeviceGetCurrPcieLinkGeneration",
                "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMaxPcieLinkGeneration",
                "nvmlDeviceGetMaxPcieLinkWidth")
HEALTH_READS_PER_30S = 7  # uncorrected ECC, remapped rows, pending pages, 4 link figures
# The modes the wide cards and the saturation panel name (#27), on the same 30 s schedule.
FACTS_CALLS = ("nvmlDeviceGetPersistenceMode", "nvmlDeviceGetComputeMode")


def per_gpu(node, wants) -> tuple[float, dict[str, float]]:
    per_tick, calls = cfake.calls_per_tick(node, wants)
    ticks = 30
    return per_tick / GPUS, {fn: n / ticks / GPUS for fn, n in calls.items()}


def health(calls: dict[str, float]) -> float:
    """The health and facts reads' share of a dashboard's calls per tick, checked to be slow."""
    share = sum(calls.get(fn, 0.0) for fn in HEALTH_CALLS)
    assert share <= HEALTH_READS_PER_30S / 30 + 1e-9, calls
    facts = sum(calls.get(fn, 0.0) for fn in FACTS_CALLS)
    assert facts <= len(FACTS_CALLS) / 30 + 1e-9, calls
    return share + facts


def test_the_dashboard_reads_what_it_shows_and_nothing_else(node):
    total, calls = per_gpu(node, DASHBOARD)
    assert total - health(calls) <= 9.0, calls
    # one call each per tick: the process lists through kept buffers, not size-then-fill
    assert calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 1.0
    assert calls["nvmlDeviceGetGraphicsRunningProcesses_v3"] == 1.0
    assert calls["nvmlDeviceGetProcessUtilization"] == 1.0
    assert calls["nvmlDeviceGetTemperature"] == pytest.approx(0.2)  # every 5 s
    for unshown in ("nvmlDeviceGetEncoderUtilization", "nvmlDeviceGetDecoderUtilization",
                    "nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetFieldValues",
                    "nvmlDeviceGetPcieThroughput"):
        assert unshown not in calls


def test_a_gpu_query_reads_only_its_fields_on_every_row(node):
    fields = parse_field_list("timestamp,index,power.draw,clocks_event_reasons.sw_power_cap")
    total, calls = per_gpu(node, query_wants("gpu", fields))
    assert calls == {"nvmlDeviceGetPowerUsage": 1.0,
                     "nvmlDeviceGetCurrentClocksEventReasons": 1.0}


def test_everything_still_reads_energy_and_every_query_field(node):
    total, calls = per_gpu(node, budget.EVERYTHING)
    assert calls["nvmlDeviceGetTotalEnergyConsumption"] == 1.0  # the advisor's counter
    assert calls["nvmlDeviceGetPowerUsage"] == 1.0
    assert calls["nvmlDeviceGetEncoderUtilization"] == 1.0
    assert calls["nvmlDeviceGetEccMode"] == pytest.approx(1 / reads.SLOW_REFRESH_S)
    # but not the link counters' 20 ms PCIe window: only a view showing the rates pays for it
    assert "nvmlDeviceGetPcieThroughput" not in calls


# ---------------------------------------------------------------------------- pure parts

async def dashboard_wants(size: tuple[int, int]):
    """What a running dashboard of 8 simulated GPUs asks its sampler for at ``size``."""
    from gputop.tui.app import GputopApp
    from tests.support.demo import advance, demo_backend

    app = GputopApp(demo_backend("training"), autostart=False)
    async with app.run_test(size=size) as pilot:
        advance(app, 3)
        await pilot.pause()
        await pilot.pause()
        return app.sampler.wants


async def test_a_narrow_dashboard_never_reads_the_wide_cards_rates(node):
    total, calls = per_gpu(node, await dashboard_wants((120, 40)))
    for unshown in ("nvmlDeviceGetEncoderUtilization", "nvmlDeviceGetDecoderUtilization",
                    "nvmlDeviceGetPcieThroughput", "nvmlDeviceGetFieldValues"):
        assert unshown not in calls
    assert total - health(calls) <= 9.0, calls


async def test_a_wide_dashboard_reads_the_rates_it_shows_on_every_tick(node):
    total, calls = per_gpu(node, await dashboard_wants((200, 60)))
    assert calls["nvmlDeviceGetEncoderUtilization"] == 1.0
    assert calls["nvmlDeviceGetDecoderUtilization"] == 1.0
    # the fake's GPUs have no GPM: the link rates from the driver's counters, PCIe TX and RX
    # and one field-values call for every NVLink counter (where Hopper has GPM: its 2 instead)
    assert calls["nvmlDeviceGetPcieThroughput"] == 2.0
    assert calls["nvmlDeviceGetFieldValues"] == 1.0
    # the dashboard's 8.8 and these five
    assert total - health(calls) <= 14.0, calls


def test_the_saturation_panel_reads_the_link_counters_of_a_gpu_without_gpm(node):
    from gputop.tui.text.wants import SATURATION_PANEL

    total, calls = per_gpu(node, budget.merge([DASHBOARD, SATURATION_PANEL]))
    assert calls["nvmlDeviceGetPcieThroughput"] == 2.0
    assert calls["nvmlDeviceGetFieldValues"] == 1.0
    assert total - health(calls) <= 12.0, calls  # the dashboard's 8.8 and these three
