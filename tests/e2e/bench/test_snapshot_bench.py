"""bench/snapshot.py runs to its figures: a bench that stops on a renamed constant gives no
figure to set beside its floor (it did, 2026-11-27, after SLOW_REFRESH_S moved to reads)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support import cfake
from tests.support.paths import ROOT


def test_the_snapshot_bench_prints_each_figure_beside_its_floor():
    why = cfake.available()
    if why is not None:
        pytest.skip(why)
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "snapshot.py"), "--ticks", "3",
                          "--runs", "1", "--cli-runs", "1"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    for label in ("simulator (--scenario crowded)", "NVML backend, pynvml on the C fake",
                  "floor: same pynvml calls + psutil"):
        m = re.search(re.escape(label) + r"\s+(\d+) us/snapshot", run.stdout)
        assert m and int(m[1]) > 0, run.stdout
    assert re.search(r"NVML backend / floor\s+\d+\.\d+ x", run.stdout), run.stdout
