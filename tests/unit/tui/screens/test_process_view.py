"""The process detail view: live plots of one process, its facts, its exit, and the signal keys
with the table's rules."""

from __future__ import annotations

import io
import os
import time

import pytest
from rich.console import Console
from rich.style import Style
from rich.table import Table
from rich.text import Text

from gputop.core.model import Container, Job, Process
from gputop.core.visible import visible
from gputop.history.store import PROCESS_TIERS
from gputop.host import os_facts
from gputop.tui.app import GputopApp
from gputop.tui.screens.process_view import (
    FactsText,
    ProcessView,
    TracePlot,
    axis_top,
    describe_process,
    facts_text,
    os_details,
)
from gputop.tui.widgets.processes import ProcessTable
from tests.support.demo import advance, demo_backend
from tests.support.tui import (
    drawn_as_textual_draws,
    notices,
    screen_text,
    settle,
)


def braille(text: str) -> int:
    return sum("\u2800" < c <= "\u28ff" for c in text)


async def test_enter_opens_live_plots_that_start_with_the_past():
    app = GputopApp(demo_backend("mixed"), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 30)
        await settle(pilot)
        table = app.query_one(ProcessTable)
        table.focus()
        await pilot.press("down", "enter")
        await settle(pilot)
        view = app.screen
        assert isinstance(view, ProcessView)
        row = table.rows[1]
        assert view.key == (row.process.pid, row.process.started)
        assert view.trace.samples() == 30  # the sampler's history, not only from now on
        text = screen_text(app)
        assert f"Process {row.process.pid}" in text and row.process.user in text
        assert "running on GPU 1" in text and "command" in text and "started" in text
        assert "SM  CPU  (%" in text and "GPU memory  host memory  (GiB)" in text
        plots = list(view.query(TracePlot))
        assert len(plots) == 2
        assert all(braille(p.render().plain) > 20 for p in plots)
        # drawn as Strips of their own, the cells Textual would draw (#26: 3 ms of each open)
        assert all(drawn_as_textual_draws(w) for w in (*plots, view.query_one(FactsText)))
        advance(app, 5)
        await settle(pilot)
        assert view.trace.samples() == 35
        assert "35 samples · esc: back" in screen_text(app)
        assert "/ filter" not in screen_text(app)  # the table's keys are not offered here
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, ProcessView)
        await pilot.press("d")  # d, shown in the footer, opens it too
        await settle(pilot)
        assert isinstance(app.screen, ProcessView)


async def test_the_view_is_built_once_and_shows_the_next_process_whole():
    """#26: each open built the view's widgets, their CSS and its footer anew (175 ms at 8x32);
    the view is kept, and shown again wholly for the next process: its facts, its own trace."""
    app = GputopApp(demo_backend("mixed"), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 30)
        await settle(pilot)
        table = app.query_one(ProcessTable)
        table.focus()
        await pilot.press("d")
        await settle(pilot)
        first = app.screen
        assert isinstance(first, ProcessView)
        before = table.rows[0].process.pid
        await pilot.press("q")
        await settle(pilot)
        await pilot.press("down", "d")
        await settle(pilot)
        assert app.screen is first  # shown again, not built again
        row = table.rows[1]
        assert first.key == (row.process.pid, row.process.started)
        assert first.trace.samples() == 30  # its own past, not the first one's
        text = screen_text(app)
        assert f"Process {row.process.pid}" in text and f"Process {before}" not in text
        assert f"PID {row.process.pid}" in text and "30 samples" in text


async def test_the_trace_is_the_sampler_history_bounded_however_long_the_view_is_open():
    app = GputopApp(demo_backend("training"), autostart=False)
    async with app.run_test(size=(100, 30)) as pilot:
        advance(app, 1)
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        view = app.screen
        advance(app, 200)
        await settle(pilot)
        times = view.trace.columns(("cpu_pct",))[0]
        assert times[-1] - times[0] >= 190  # all of it, the older part one sample per bucket
        assert PROCESS_TIERS.fine < len(times) < 150


async def test_simulated_processes_are_not_signalled_from_the_view_either():
    app = GputopApp(demo_backend("training"), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        await pilot.press("d", "k")
        await settle(pilot)
        assert isinstance(app.screen, ProcessView)
        assert any("not on this machine" in n.message for n in notices(app))


def test_facts_name_every_gpu_instance_namespace_pid_container_and_job():
    p = Process(pid=4242, user="alice", command="python train.py", started=1763760000.0,
                namespace_pid=17, gpu_memory_mib=1000, sm_pct=80, gpu_instance_id=1,
                compute_instance_id=0, container=Container(runtime="docker", id="ab" * 32,
                                                           name="trainer", pod="llm-0",
                                                           pod_namespace="ml"),
                job=Job(scheduler="slurm", id="4242", step="0"))
    other = Process(pid=4242, gpu_memory_mib=3000, sm_pct=40, started=1763760000.0)
    facts = dict(describe_process([(0, p), (3, other)], now=1763763600.0))
    assert facts["PID"] == "4242 (PID 17 in its own namespace)"
    assert facts["GPUs"] == "0 (MIG GI 1 CI 0), 3"
    assert facts["GPU memory"] == "4000MiB" and facts["SM"] == "60%"
    assert facts["running"] == "1h00m" and facts["started"] == "2025-11-21 21:20:00"
    assert facts["container"] == "trainer" and facts["pod"] == "llm-0"
    assert facts["job"] == "slurm 4242.0"
    assert facts["CPU"] == "N/A" and facts["host memory"] == "N/A"


def test_a_gone_process_says_gone_for_its_command():
    facts = dict(describe_process([(0, Process(pid=77, gpu_memory_mib=10, gone=True))], now=1.0))
    assert facts["command"] == "gone" and facts["user"] == "N/A"


def test_the_axis_ends_at_a_round_number_above_the_peak():
    assert axis_top(None, 100.0) == 100.0 and axis_top(97.0, 100.0) == 100.0
    assert axis_top(340.0, 100.0) == 500.0 and axis_top(101.0, 100.0) == 200.0
    assert axis_top(61.0, 1.0) == 100.0 and axis_top(0.3, 1.0) == 1.0


def test_os_facts_are_the_kernels_and_na_where_they_may_not_be_read(monkeypatch):
    here = os.getpid()
    facts = dict(os_details(here, os_facts.read(here).started))
    assert facts["status"] == "running" and facts["parent"] == str(os.getppid())
    assert facts["cwd"] == os.getcwd() and int(facts["threads"]) >= 1
    monkeypatch.setattr(os_facts, "cwd", lambda pid: None)  # another user's process
    assert dict(os_details(here, None))["cwd"] == "N/A"


def test_os_facts_of_a_reused_pid_or_one_not_ours_say_so():
    assert os_details(os.getpid(), time.time() - 3600) == [
        ("status", f"exited (PID {os.getpid()} now belongs to another process)")]
    assert os_details(2**22 + 1, None) == [("status", "exited (no longer running on this host)")]


def test_os_facts_not_ours_to_read_are_not_inspected(monkeypatch):
    def refused(pid: int) -> os_facts.OsFacts:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os_facts, "read", refused)
    assert os_details(os.getpid(), None) == [("status", "no permission to inspect")]


def _grid(fields: list[tuple[str, str]]) -> Table:
    """The Rich grid the facts were drawn with until #26: the layout facts_text keeps."""
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in fields:
        table.add_row(key, Text(visible(value)))
    return table


@pytest.mark.parametrize("width", [14, 20, 31, 44, 56, 90])
def test_facts_are_laid_out_as_a_grid_lays_them_out(width):
    """Labels right-aligned, values wrapped at words in their own column and long words
    folded, wide characters counted by cell, a blank row kept: line by line and span by span
    what the Rich grid drew, without measuring a table on each sample."""
    fields = [("PID", "4242 (PID 17 in its own namespace)"), ("user", "ålice-数据"),
              ("command", "python train.py --config=/very/long/path/without/spaces/cfg.yaml "
                          "--lr 3e-4\x1b[31m"),
              ("GPUs", "0 (MIG GI 1 CI 0), 3"), ("", ""), ("status", "sleeping"),
              ("cwd", "/home/alice/🚀/runs")]
    console = Console(width=width, file=io.StringIO())
    options = console.options.update_width(width)
    ours, theirs = ([[(seg.text, seg.style or Style.null()) for seg in line]
                     for line in console.render_lines(drawn, options, pad=False)]
                    for drawn in (facts_text(fields, width, console), _grid(fields)))
    assert ours == theirs
