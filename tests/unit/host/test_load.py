"""The host line's figures read from /proc's text, counted as psutil (and htop) count them."""

from __future__ import annotations

import pytest

from gputop.host.load import HostReader, boot_time, busy_pct, cpu_times, facts, meminfo

STAT = """cpu  100 10 50 800 40 5 5 0 30 0
cpu0 50 5 25 400 20 2 3 0 15 0
intr 12345 0 0
ctxt 999
btime 1700000000
processes 4242
"""
MEMINFO = """MemTotal:       16384000 kB
MemFree:         2048000 kB
MemAvailable:    8192000 kB
Buffers:          100000 kB
Cached:          3000000 kB
SwapTotal:       4096000 kB
SwapFree:        3072000 kB
HugePages_Total:       0
"""


def test_cpu_busy_leaves_out_idle_iowait_and_guest_time():
    before = cpu_times(STAT)
    assert before == (100, 10, 50, 800, 40, 5, 5, 0)  # guest and guest_nice are in user/nice
    # 100 ticks later: 30 user, 10 system, 50 idle, 10 iowait (and guest, counted in user)
    after = cpu_times("cpu  130 10 60 850 50 5 5 0 50 0\n")
    assert busy_pct(before, after) == 40.0
    assert busy_pct(after, after) == 0.0  # no time passed: nothing made up
    assert busy_pct(after, before) == 0.0  # a count that went backwards


def test_memory_swap_and_uptime_as_psutil_reports_them():
    sizes = meminfo(MEMINFO)
    assert sizes["MemTotal"] == 16384000 * 1024 and sizes["HugePages_Total"] == 0
    read = facts(STAT, MEMINFO, cpu_times(STAT), (1.0, 0.5, 0.25), now=1700000090.0)
    assert read.mem_total == 16384000 * 1024
    assert read.mem_used == (16384000 - 8192000) * 1024  # total minus available
    assert (read.swap_used, read.swap_total) == (1024000 * 1024, 4096000 * 1024)
    assert read.uptime_s == 90.0 and boot_time(STAT) == 1700000000.0
    assert read.load == (1.0, 0.5, 0.25) and read.cpu_pct == 0.0


def test_no_swap_is_zero_total_and_an_old_kernel_estimates_available():
    old = "MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 50 kB\nCached: 250 kB\n"
    read = facts(STAT, old, cpu_times(STAT), None, now=1700000001.0)
    assert (read.swap_used, read.swap_total) == (0, 0)
    assert read.mem_used == (1000 - 400) * 1024


@pytest.mark.parametrize("missing", ["stat", "meminfo"])
def test_an_unreadable_proc_gives_no_line_rather_than_a_made_up_one(tmp_path, missing):
    (tmp_path / "stat").write_text(STAT)
    (tmp_path / "meminfo").write_text(MEMINFO)
    assert HostReader(proc=str(tmp_path)).read() is not None
    (tmp_path / missing).unlink()
    assert HostReader(proc=str(tmp_path)).read() is None
