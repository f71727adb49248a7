"""Helpers shared by the dashboard tests: their autouse fixtures (imported by name), a dashboard
to drive, and the screen and notifications read through Textual's public API only."""

import asyncio
import getpass
import html
import os
import re
import socket
import time
from dataclasses import dataclass

import psutil
import pytest
from rich.cells import cell_len
from rich.style import Style
from textual.geometry import Region
from textual.notifications import Notification

from gputop.backends.base import Backend
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, DeviceInfo, NodeInfo, Process, Snapshot
from gputop.tui.app import GputopApp
from gputop.tui.widgets.processes import ProcessTable
from gputop.tui.widgets.strips import TextLines
from tests.support.demo import demo_backend


@pytest.fixture(autouse=True, name="utc")
def utc_fixture(monkeypatch):
    """Clock text in the header and details is local time: make it the same everywhere."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    time.tzset()


@pytest.fixture(autouse=True, name="no_user_themes")
def no_user_themes_fixture(monkeypatch, tmp_path):
    """Tests never read the developer's own ~/.config/gputop/themes, nor the advisor journals in
    their ~/.local/state/gputop (the dashboard warns of those at start)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    os.makedirs(tmp_path / "config", exist_ok=True)


# ------------------------------------------------------------- the dashboard, through Textual's public API
def make_app(scenario: str = "training", **kwargs) -> GputopApp:
    """Build a dashboard on the simulator's ``scenario`` that samples only when a test says."""
    return GputopApp(demo_backend(scenario), autostart=False, **kwargs)


async def settle(pilot) -> None:
    """Let two rounds of messages run, so what a key started is on the screen."""
    await pilot.pause()
    await pilot.pause()


async def wait_until(pilot, cond, timeout: float = 30.0) -> None:
    """Pause until ``cond()`` holds, failing after ``timeout`` seconds: for what the app does
    over more than one frame (a resize, a scroll, a sweep), where one pause may end first."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        assert loop.time() < deadline, "timed out"
        await pilot.pause(0.05)


def table(app) -> ProcessTable:
    """Return the dashboard's process table."""
    return app.query_one(ProcessTable)


_LINE = re.compile(r'<text class="[^"]*" x="([\d.]+)" y="[\d.]+" textLength="[\d.]+" '
                   r'clip-path="url\(#[\w-]+-line-(\d+)\)">(.*?)</text>', re.S)
_CELL_WIDTH = 0.61 * 20  # rich's SVG export: a cell is 0.61 of its 20px font wide


def screen_lines(app) -> list[str]:
    """Return every line of the screen as the terminal shows it, each as wide as the screen.

    Read from the SVG screenshot Textual exports (its public API): rich writes each run of
    text at its cell and leaves blank runs out, so the cells between runs are spaces."""
    width, height = app.size
    cells: list[list[tuple[int, str]]] = [[] for _ in range(height)]
    for x, line, text in _LINE.findall(app.export_screenshot()):
        text = html.unescape(text.replace("&#160;", " ")).replace("\n", "")  # rich's line ends
        cells[int(line)].append((round(float(x) / _CELL_WIDTH), text))
    lines = []
    for runs in cells:
        text = ""
        for column, run in sorted(runs):
            text += " " * (column - cell_len(text)) + run
        lines.append(text + " " * (width - cell_len(text)))
    return lines


def visible_lines(app) -> list[str]:
    """Return the screen's lines (see `screen_lines`)."""
    return screen_lines(app)


def screen_text(app) -> str:
    """Return the whole screen as text, one line a row."""
    return "\n".join(screen_lines(app))


def screen_styles(app) -> list[list[tuple[str, Style]]]:
    """Return each cell of the screen with the style it is drawn in (after NO_COLOR's filter).

    The characters come from `screen_lines`, the styles from ``Screen.get_style_at``; runs of
    cells of one style are joined, as the terminal would get them."""
    rows = []
    for y, line in enumerate(screen_lines(app)):
        runs: list[tuple[str, Style]] = []
        x = 0
        for char in line:
            style = app.screen.get_style_at(x, y)
            if runs and runs[-1][1] == style:
                runs[-1] = (runs[-1][0] + char, style)
            else:
                runs.append((char, style))
            x += cell_len(char)
        rows.append(runs)
    return rows


# ------------------------------------------------------------------------------- notifications
def notices(app) -> list[Notification]:
    """Return the notifications ``app`` holds now, oldest first.

    The one place the tests read Textual's private list: ``run_test`` draws no toasts, and the
    dashboard's `notify_once` takes a notice back, so no public API holds the current set."""
    return list(app._notifications)


# ----------------------------------------------------------------- a real backend on the screen
@dataclass
class Drawn:
    """What the dashboard drew of a backend: its screen first, then after each key pressed, and
    the notifications it held once the first sample was drawn."""

    screens: list[str]
    notices: list[Notification]


async def draw_backend(backend: Backend, size: tuple[int, int], *keys: str) -> Drawn:
    """Open ``backend``, draw one sample of it at ``size``, press ``keys`` one by one, quit, and
    close it: the pilot every vendor's dashboard test drives."""
    backend.open()
    app = GputopApp(backend, autostart=False)
    try:
        async with app.run_test(size=size) as pilot:
            app.sampler.tick()
            await settle(pilot)
            drawn = Drawn(["\n".join(visible_lines(app))], notices(app))
            for key in keys:
                await pilot.press(key)
                await settle(pilot)
                drawn.screens.append("\n".join(visible_lines(app)))
            await pilot.press("q")
    finally:
        backend.close()
    return drawn


# ------------------------------------------------------------------------ a real local process
class LocalBackend(Backend):
    """Stands in for a real local backend whose one GPU runs a process of this test."""

    name = "fake"

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids

    def info(self) -> NodeInfo:
        return NodeInfo(host=socket.gethostname(), backend="fake",
                        devices=(DeviceInfo(index=0, name="Fake GPU"),))

    def sample(self, devices=None, *, wants: Wants | None = EVERYTHING) -> Snapshot:
        procs = []
        for pid in self.pids:
            try:
                started = psutil.Process(pid).create_time()
            except psutil.NoSuchProcess:
                started = None
            procs.append(Process(pid=pid, user=getpass.getuser(), name="sleep",
                                 command="sleep 60", gpu_memory_mib=100, started=started))
        return Snapshot(host=socket.gethostname(), time=time.time(), backend="fake",
                        devices=(Device(index=0, name="Fake GPU", processes=tuple(procs)),))


def drawn_as_textual_draws(widget: TextLines) -> bool:
    """Whether ``widget`` (one of widgets/strips.py's TextLines) draws, on its own path, the
    cells Textual draws of the same Text."""
    crop = Region(0, 0, *widget.size)
    widget.refresh()  # nothing kept from the last frame
    widget._render_content = None  # Textual's drawing: not called on this path
    ours = [list(strip) for strip in widget.render_lines(crop)]
    del widget._render_content
    widget._text_strips = lambda: None  # what Textual draws of the same Text
    widget.refresh()
    textual = [list(strip) for strip in widget.render_lines(crop)]
    del widget._text_strips
    return ours == textual
