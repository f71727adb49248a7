"""The process detail view on real processes: one that exits keeps its last plots and says so, one
that only released its GPU is not called exited, and the signal keys ask first."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from gputop.tui.app import GputopApp
from gputop.tui.screens.modals import ConfirmSignal
from gputop.tui.screens.process_view import ProcessView, TracePlot
from tests.support import paths
from tests.support.tui import (
    LocalBackend,
    notices,
    screen_text,
    settle,
)


def braille(text: str) -> int:
    return sum("\u2800" < c <= "\u28ff" for c in text)


async def test_an_exited_process_keeps_its_last_plots_and_says_so(child):
    backend = LocalBackend([child.pid])
    app = GputopApp(backend, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(5):
            app.sampler.tick()
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        view = app.screen
        assert "● running on GPU 0" in screen_text(app)
        assert "sleeping" in screen_text(app) or "running" in screen_text(app)  # the OS status
        child.kill()
        child.wait()
        backend.pids = []  # the driver drops an exited process
        time.sleep(0.01)
        app.sampler.tick()
        await settle(pilot)
        text = screen_text(app)
        assert "■ exited at " in text and "the plots keep its last readings" in text
        assert "exited (no longer running on this host)" in text
        assert view.trace.samples() == 5
        assert braille(view.query_one("#pv-memory", TracePlot).render().plain) > 0


async def test_a_process_that_only_released_its_gpu_is_not_called_exited(child):
    backend = LocalBackend([child.pid])
    app = GputopApp(backend, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        backend.pids = []
        app.sampler.tick()
        await settle(pilot)
        assert "released its GPUs at" in screen_text(app)
        assert "still running on this host" in screen_text(app)


async def test_signal_keys_in_the_view_ask_first_and_keep_the_trace_going(child):
    app = GputopApp(LocalBackend([child.pid]), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        view = app.screen
        await pilot.press("k")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmSignal) and app.screen.signal_name == "SIGTERM"
        time.sleep(0.01)
        app.sampler.tick()  # a sample while the question is open still reaches the trace
        await settle(pilot)
        assert view.trace.samples() == 2
        await pilot.press("n")
        await settle(pilot)
        time.sleep(0.2)
        assert child.poll() is None  # no means nothing sent
        assert app.screen is view
        await pilot.press("K")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert child.wait(timeout=5) == -9
        assert any("sent SIGKILL" in n.message for n in notices(app))


async def test_readonly_view_has_no_signal_keys(child):
    app = GputopApp(LocalBackend([child.pid]), autostart=False, readonly=True)
    async with app.run_test(size=(120, 40)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        assert "SIGTERM" not in screen_text(app)
        for key in ("k", "K", "i"):
            await pilot.press(key)
            await settle(pilot)
            assert isinstance(app.screen, ProcessView)
    time.sleep(0.2)
    assert child.poll() is None




def test_the_view_asks_the_kernel_without_loading_psutil():
    """#26: psutil cost the view's first open about 9 ms; the dashboard loads it nowhere else."""
    code = ("import os, sys\n"
            "from gputop.tui.screens.process_view import os_details\n"
            "print(dict(os_details(os.getpid(), None))['status'], 'psutil' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(paths.ROOT)), cwd=paths.ROOT,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["running", "False"]
