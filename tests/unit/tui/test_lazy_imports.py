"""The dashboard imports only what its first screen draws (#26): the other commands, screens,
the advisor, plotting, other backends and psutil are loaded where they are used."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support import paths
from tests.support.start_imports import held_out, loaded

# The dashboard's start (gputop/commands/dashboard.py) on the simulator, up to its first screen
# drawn headless and its alert rules at work (built after the first frame, with no settings
# file and no journal yet), with one process seen for the first time as the NVML, AMD and
# Intel backends see theirs (the simulator's processes are not real); then every module loaded.
START = """
import os, sys
KEYS = sys.argv[1:]
from functools import partial
from gputop.backends import open_backend
from gputop.commands import dashboard, main
from gputop.host.processes import HostProcesses

argv = ["--backend", "sim", "--no-config"]
parser = main.build_parser()
config = dashboard.checked(dashboard.configure(parser, argv, parser.parse_args(argv)))
backend = open_backend(config.source.backend, config.source.options)
HostProcesses().lookup(os.getpid())
dashboard.import_asyncio_without_tls()
import asyncio
from gputop.tui.app import GputopApp

async def first_screen():
    app = GputopApp(backend, interval=0.1,
                    alerts=partial(dashboard.alert_config, config.settings))
    async with app.run_test(size=(120, 40)) as pilot:
        while app.snapshot is None or app.alerting is None:
            await pilot.pause(0.02)
        for key in KEYS:
            await pilot.press(key)
            await pilot.pause(0.3)

asyncio.run(first_screen())
print("\\n".join(sys.modules))
"""


def modules_after(tmp_path, *keys: str) -> list[str]:
    """Return the modules loaded once the dashboard (on the simulator) drew its first screen and
    then took ``keys``."""
    env = dict(os.environ, PYTHONPATH=str(paths.ROOT), XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    run = subprocess.run([sys.executable, "-c", START, *keys], capture_output=True, text=True,
                         env=env, cwd=paths.ROOT, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_the_first_screen_loads_no_other_screen_command_backend_or_psutil(tmp_path):
    modules = modules_after(tmp_path)
    assert "gputop.tui.app" in modules and "gputop.backends.sim.backend" in modules
    assert loaded(modules, held_out("sim")) == []


def test_the_saturation_panel_opens_without_the_dialogs(tmp_path):
    # its screen sat among the help, confirmation and prompt dialogs: 2 ms of its first open
    # went to building their classes and importing Textual's Label for them (#26)
    modules = modules_after(tmp_path, "s")
    assert "gputop.tui.screens.saturation" in modules
    assert loaded(modules, ("gputop.tui.screens.modals", "textual.widgets._label")) == []


def test_the_advisor_opens_without_what_only_a_sweep_needs(tmp_path):
    # the passive view and the journal's word are what the advisor shows at each open; the
    # sweep's modules, its curve's statistics and its progress bar and table come with `s`
    modules = modules_after(tmp_path, "a")
    assert "gputop.tui.screens.advisor" in modules and "gputop.advisor.passive" in modules
    assert loaded(modules, ("gputop.advisor.sweep", "gputop.advisor.curve", "statistics",
                            "textual.widgets._data_table", "textual.widgets._progress_bar")) == []
