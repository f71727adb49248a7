"""The suite's own promise: no process a test starts outlives the run (tests/conftest.py)."""

from __future__ import annotations

import re
from pathlib import Path

import psutil

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def test_a_process_a_test_leaves_behind_fails_the_run_and_is_killed(pytester):
    """A test that orphans a process (its parent gone, so only the environment marker says whose
    it is) and one that leaves a child running: the run fails, names both, and kills them."""
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_leaky="""
        import subprocess

        def test_orphan():
            subprocess.run(["sh", "-c", "sleep 301 >/dev/null 2>&1 &"], check=True)

        def test_child():
            subprocess.Popen(["sleep", "302"])
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == 1
    text = result.stderr.str()
    assert "processes the tests left running" in text
    pids = [int(p) for p in re.findall(r"^  (\d+) \(parent \d+\): sleep 30[12]$", text, re.M)]
    assert len(pids) == 2, text
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"


def test_a_clean_run_passes(pytester):
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_clean="""
        import subprocess

        def test_waits():
            subprocess.run(["sleep", "0.1"], check=True)
    """)
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider").ret == 0
