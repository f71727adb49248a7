"""The dashboard's first moments on a slow device tool, and how cards word missing values."""

import io
import time

import pytest

from gputop.commands.dashboard import open_backend_telling_why
from gputop.core.model import Device
from gputop.tui.widgets.gpu import clock_text, power_text
from tests.support.tui import notices


def test_a_slow_backend_open_is_announced_not_a_blank_terminal():
    out = io.StringIO()
    got = open_backend_telling_why(lambda: (time.sleep(0.3), "backend")[1], notice_after=0.05,
                                   stream=out)
    assert got == "backend"
    assert "waiting for the first reading" in out.getvalue()


def test_a_quick_open_says_nothing_and_errors_reach_the_caller():
    out = io.StringIO()
    assert open_backend_telling_why(lambda: "b", notice_after=1.0, stream=out) == "b"
    assert out.getvalue() == ""

    def fail():
        raise ValueError("no npu-smi")

    with pytest.raises(ValueError, match="no npu-smi"):
        open_backend_telling_why(fail, notice_after=1.0, stream=out)


def test_cards_leave_out_what_the_device_does_not_report():
    assert clock_text(Device(0, clock_sm_mhz=1980, clock_sm_max_mhz=1980)) == " SM 1980/1980MHz"
    assert clock_text(Device(0, clock_sm_mhz=1800)) == " SM 1800MHz"  # Ascend: no maximum
    assert power_text(Device(0, power_draw_w=660.4, power_limit_w=700)) == "660/700W"
    assert power_text(Device(0, power_draw_w=87.2)) == "87W"  # no limit to compare with
    assert power_text(Device(0)) == "N/A"


async def test_the_dashboard_says_why_it_shows_the_simulator():
    from gputop.tui.app import GputopApp
    from tests.support.demo import demo_backend

    backend = demo_backend("training")
    backend.fallback_reason = "nvml: NVML: libnvidia-ml.so.1 not found"
    app = GputopApp(backend, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        messages = [n.message for n in notices(app)]
    assert any("libnvidia-ml.so.1 not found" in m and "simulator" in m for m in messages)


async def test_no_such_notice_when_the_simulator_was_asked_for():
    from gputop.tui.app import GputopApp
    from tests.support.demo import demo_backend

    app = GputopApp(demo_backend("training"), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        messages = [n.message for n in notices(app)]
    assert not any("simulator" in m for m in messages)
