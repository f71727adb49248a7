"""The host line (issue 14, item 5): this node's CPU, load, RAM, swap and uptime under the
header, read off the UI thread, fitted to the width, and never shown for a replayed node. Until
the first reading it holds its row with its labels and no values (#26)."""

from __future__ import annotations

import asyncio
import re
import time

import psutil

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.host.load import HostFacts, HostReader
from gputop.tui.app import GputopApp
from gputop.tui.text import fmt
from gputop.tui.widgets.hostline import HostLine
from tests.support.demo import recorded_replay
from tests.support.tui import screen_lines, wait_until

GIB = 2**30
FACTS = HostFacts(cpu_pct=12.4, load=(1.25, 0.9, 0.75), mem_used=int(61.2 * GIB),
                  mem_total=int(503.5 * GIB), swap_used=0, swap_total=8 * GIB,
                  uptime_s=3 * 86400 + 4 * 3600 + 12 * 60)


def test_the_whole_line_as_htop_users_read_it():
    assert fmt.host_line(FACTS, 120) == (
        "CPU  12% · load 1.25 0.90 0.75 · RAM 61.2/503.5G · swap 0.0/8.0G · up 3d04h")


def test_it_fits_every_width_and_keeps_cpu_load_and_ram_at_80_columns():
    for width in range(1, 121):
        assert len(fmt.host_line(FACTS, width)) <= width
    line = fmt.host_line(FACTS, 60)
    assert line.startswith("CPU  12%") and "1.25 0.90 0.75" in line and "61.2/503.5G" in line
    assert fmt.host_line(FACTS, 55) == "CPU  12% load 1.25 0.90 0.75 RAM 61.2/503.5G up 3d04h"


def test_before_the_first_reading_the_line_has_its_labels_and_no_values():
    assert fmt.host_line(None, 120) == "CPU … · load … · RAM … · swap … · up …"
    assert fmt.host_line(None, 30) == "CPU … load … RAM … swap … up …"
    for width in range(1, 121):
        assert len(fmt.host_line(None, width)) <= width


def test_no_swap_says_none_and_a_missing_load_average_is_not_made_up():
    facts = HostFacts(cpu_pct=0.0, load=None, mem_used=GIB, mem_total=4 * GIB,
                      swap_used=0, swap_total=0, uptime_s=59)
    assert fmt.host_line(facts, 120) == (
        "CPU   0% · load N/A · RAM 1.0/4.0G · swap none · up 0:59")


def test_the_reader_reads_at_most_once_per_gap():
    reader = HostReader(min_gap_s=60.0)
    first = reader.due()
    assert first is not None and reader.due() is None
    assert first.mem_total == psutil.virtual_memory().total
    assert abs(first.uptime_s - (time.time() - psutil.boot_time())) < 5


async def test_the_running_dashboard_shows_this_nodes_host_line():
    # The simulator at its own pace: the tests' demo backend runs a million times faster, which
    # had the running sampler take a core for the whole test.
    backend = SimBackend(BackendOptions(scenario="training", seed=1))
    backend.open()
    app = GputopApp(backend, interval=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.query_one(HostLine).facts is not None, timeout=10)
        await pilot.pause()
        line = screen_lines(app)[1]
    m = re.match(r"CPU +(\d+)% · load ([\d.]+) ([\d.]+) ([\d.]+) · RAM ([\d.]+)/([\d.]+)G", line)
    assert m, line
    assert 0 <= int(m[1]) <= 100
    load1 = psutil.getloadavg()[0]
    assert abs(float(m[2]) - load1) < max(1.0, load1 * 0.5)
    mem = psutil.virtual_memory()
    assert float(m[6]) == round(mem.total / GIB, 1)
    assert abs(float(m[5]) - (mem.total - mem.available) / GIB) < max(1.0, mem.total / GIB / 10)
    assert len(line.rstrip()) <= 80


async def test_a_replayed_log_does_not_show_this_machines_host_line(tmp_path):
    app = GputopApp(recorded_replay(tmp_path, 5), interval=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(10):
            await pilot.pause()
            await asyncio.sleep(0.05)
        assert app.host_reader is None
        assert not app.query(HostLine)  # no line at all, from the first frame
        assert not any(line.startswith("CPU ") for line in screen_lines(app))
