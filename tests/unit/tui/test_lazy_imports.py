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

asyncio.run(first_screen())
print("\\n".join(sys.modules))
"""


def test_the_first_screen_loads_no_other_screen_command_backend_or_psutil(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(paths.ROOT), XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    run = subprocess.run([sys.executable, "-c", START], capture_output=True, text=True, env=env,
                         cwd=paths.ROOT, timeout=60)
    assert run.returncode == 0, run.stderr
    modules = run.stdout.split()
    assert "gputop.tui.app" in modules and "gputop.backends.sim.backend" in modules
    assert loaded(modules, held_out("sim")) == []
