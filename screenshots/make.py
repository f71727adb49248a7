"""Regenerate screenshots/*.svg from deterministic simulator scenarios.

    python screenshots/make.py            # all of them
    python screenshots/make.py gpu-lost   # just one

Every shot uses the simulator with a fixed epoch and host name, driven tick by tick, in UTC, so
the same checkout always draws the same pictures.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from gputop.tui.app import GputopApp  # noqa: E402
from tests.support.demo import advance, demo_backend  # noqa: E402


@dataclass(frozen=True)
class Shot:
    name: str
    scenario: str
    size: tuple[int, int] = (120, 40)
    seconds: float = 90.0
    theme: str | None = "dark"
    keys: tuple[str, ...] = ()
    then: Callable[[GputopApp], Awaitable[None]] | None = None
    replay: bool = False  # record `seconds` of the scenario to a CSV log and open that instead
    no_color: bool = False  # as with NO_COLOR=1 in the environment
    readonly: bool = False  # as --readonly
    alerts: bool = False  # the shipped alert rules at work (no channel, no journal)


SHOTS = (
    Shot("dashboard-training", "training"),
    Shot("hints-straggler", "straggler"),
    Shot("no-color", "mixed", size=(100, 30), theme=None, no_color=True,
         keys=("greater_than_sign",)),
    Shot("dense-16", "dense-16"),
    Shot("light-theme", "mixed", theme="light"),
    Shot("filtered-processes", "crowded", keys=("C", "slash", *"models/b")),
    Shot("grouped-by-job", "mixed", keys=("b",)),
    Shot("gpu-lost", "gpu-lost", seconds=40.0),
    Shot("ssh-80x24", "power-capped", size=(80, 24)),
    Shot("history-plot", "dataloader-bound", keys=("greater_than_sign", "h")),
    Shot("process-detail", "dataloader-bound", keys=("down", "enter")),
    Shot("wide-cards", "mixed", size=(200, 60)),
    Shot("high-contrast", "straggler", theme="high-contrast"),
    Shot("ansi-16-colours", "training", theme="ansi"),
    Shot("saturation-straggler", "straggler", keys=("s",)),
    Shot("saturation-dataloader-bound", "dataloader-bound", keys=("s",)),
    Shot("replay-paused", "straggler", seconds=120.0, replay=True),
    Shot("mig-120x40", "mig"),
    Shot("mig-80x24", "mig", size=(80, 24)),
    Shot("mig-dense", "mig-dense"),
    Shot("mig-instances", "mig", size=(150, 56)),
    Shot("mig-saturation", "mig", keys=("s",)),
    Shot("health", "unhealthy"),
    Shot("read-only", "mixed", readonly=True),
    Shot("alerts", "xid-thermal", seconds=45.0, keys=("exclamation_mark",), alerts=True),
    Shot("xid-events", "xid-thermal", seconds=45.0, keys=("x",)),
    Shot("amd-mi300x", "mi300x", size=(200, 60)),
    Shot("intel-max-1550-saturation", "max-1550", keys=("s",)),
)


def replay_backend(shot: Shot, folder: Path):
    """The scenario recorded as gputop's `r` key would, one sample a second, opened by the
    replay backend and paused at its start."""
    from gputop.backends import open_backend
    from gputop.backends.base import BackendOptions
    from gputop.query.recorder import Recorder

    log = folder / "llama-8b-run.csv"
    sim = demo_backend(shot.scenario)
    with Recorder(str(log)) as rec:
        for _ in range(int(shot.seconds)):
            rec.write(sim.sample())
            sim.clock.sleep(1.0)
    backend = open_backend("replay", BackendOptions(replay=str(log)))
    backend.player.pause()
    return backend


async def take_replay(shot: Shot, out: Path) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        backend = replay_backend(shot, Path(tmp))
        app = GputopApp(backend, autostart=False, theme=shot.theme)
        async with app.run_test(size=shot.size) as pilot:
            for _ in range(int(shot.seconds * 3 / 4)):  # stepped through, so history fills
                backend.player.step(1)
                app.sampler.tick()
            await pilot.pause()
            await pilot.pause()
            app.clear_notifications()
            await pilot.pause()
            path = app.save_screenshot(filename=f"{shot.name}.svg", path=str(out))
        backend.close()
    return Path(path)


async def take(shot: Shot, out: Path) -> Path:
    if shot.replay:
        return await take_replay(shot, out)
    if shot.no_color:
        os.environ["NO_COLOR"] = "1"
    try:
        app = GputopApp(demo_backend(shot.scenario), autostart=False, theme=shot.theme,
                        readonly=shot.readonly, alerts=default_alerts if shot.alerts else None)
    finally:
        os.environ.pop("NO_COLOR", None)
    async with app.run_test(size=shot.size) as pilot:
        if shot.alerts:  # the rules start after the first frame: let them see every sample
            await pilot.pause()
            await pilot.pause()
        advance(app, shot.seconds)
        await pilot.pause()
        if shot.keys:
            await pilot.press(*shot.keys)
        await pilot.pause()
        await pilot.pause()
        app.clear_notifications()
        await pilot.pause()
        path = app.save_screenshot(filename=f"{shot.name}.svg", path=str(out))
    return Path(path)


def default_alerts():
    from gputop.alerts.defaults import DEFAULT_RULES
    from gputop.alerts.runtime import AlertConfig

    return AlertConfig(DEFAULT_RULES)


def main(argv: list[str]) -> int:
    os.environ["TZ"] = "UTC"
    time.tzset()
    os.environ["XDG_CONFIG_HOME"] = str(HERE / ".no-user-themes")  # never the user's themes
    os.environ["XDG_STATE_HOME"] = str(HERE / ".no-user-state")  # nor their advisor journals
    os.environ.pop("NO_COLOR", None)
    wanted = [s for s in SHOTS if not argv or s.name in argv]
    if not wanted:
        print(f"no such screenshot; choose from: {', '.join(s.name for s in SHOTS)}")
        return 2
    for shot in wanted:
        path = asyncio.run(take(shot, HERE))
        print(f"wrote {path.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
