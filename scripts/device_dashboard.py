"""Draw the dashboard on the machine's real GPUs (NVML) and save SVG screenshots.

    python scripts/device_dashboard.py OUTDIR

Used by scripts/device-check.sh on a lent GPU machine: the plain dashboard after a few live
samples, and the saturation panel (GPM where the GPU has it), each at 120x40.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gputop.backends import BackendOptions, create  # noqa: E402
from gputop.tui.app import GputopApp  # noqa: E402


async def shoot(out: Path) -> None:
    """Run the dashboard headless on NVML for a few seconds and save what it drew."""
    backend = create("nvml", BackendOptions())
    backend.open()
    app = GputopApp(backend, interval=1.0)
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            await pilot.pause(0.25)
        app.save_screenshot(filename="dashboard-real.svg", path=str(out))
        started = time.perf_counter()
        await pilot.press("s")
        await pilot.pause()
        print(f"key s drawn in {(time.perf_counter() - started) * 1000:.0f} ms")
        await pilot.pause(3)
        app.save_screenshot(filename="saturation-real.svg", path=str(out))


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    asyncio.run(shoot(target))
