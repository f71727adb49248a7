"""The suite's own promise: no process a test starts outlives the run (tests/conftest.py)."""

from __future__ import annotations

import re
from pathlib import Path

import psutil
import pytest

from tests.support.paths import ROOT

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


@pytest.fixture(autouse=True)
def short_grace(monkeypatch):
    """The inner sessions leak on purpose: waiting the suite's 5 s for their leaks to go is
    20 s of CI for nothing the tests check."""
    monkeypatch.setenv("GPUTOP_LEFT_BEHIND_GRACE_S", "1.0")
# In this one process, and on xdist's workers as the suite runs (the controller checks for all).
RUNS = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["one-process", "xdist"])


@RUNS
def test_a_process_a_test_leaves_behind_fails_the_run_and_is_killed(pytester, dist):
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
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *dist)
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


ORPHAN_LOOP = """
    import subprocess
    import time

    def start_loop(tmp_path):
        # The agentless cluster's remote: a fake nvidia-smi loop that sshd started in a fresh
        # environment (no session marker) and whose session dropped (its parent is now 1).
        fakebin = tmp_path / "fakebin"
        fakebin.mkdir()
        tool = fakebin / "nvidia-smi"
        tool.write_text("#!/bin/sh\\necho $$ >> '" + str(tmp_path / "remote-pids") + "'\\n"
                        "while sleep 1; do :; done\\n")
        tool.chmod(0o755)
        subprocess.run(["env", "-i", "sh", "-c",
                        f"'{tool}' --query-gpu=index,name --format=csv -lms 500 >/dev/null 2>&1 &"],
                       check=True)
        deadline = time.monotonic() + 5
        while not (tmp_path / "remote-pids").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return fakebin
"""


@RUNS
def test_an_orphaned_fake_nvidia_smi_loop_fails_the_run(pytester, dist):
    """The loop a full run used to leave behind (#25): no marker in its environment, parent 1,
    only its command line names the run's folder. The check finds it, fails the run, kills it."""
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_orphan=ORPHAN_LOOP + """
    def test_leaves_the_loop(tmp_path):
        start_loop(tmp_path)
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *dist)
    assert result.ret == 1
    text = result.stderr.str()
    # The line names the loop by its script's folder: the report cuts a long command line short,
    # and under xdist the run's folders are deeper.
    [pid] = [int(p) for p in re.findall(r"^  (\d+) \(parent \d+\): /bin/sh \S+/fakebin/", text, re.M)]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"


def test_the_ssh_lab_stops_such_a_loop_by_its_pid(pytester, monkeypatch):
    """What the SSH lab does at its end (tests/support/cluster_lab.py): each loop wrote its PID
    down, and the lab kills by PID those still running from its fakebin; the run passes."""
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_orphan=ORPHAN_LOOP + """
    from tests.support.cluster_lab import stop_remote_tools

    def test_stops_the_loop(tmp_path):
        fakebin = start_loop(tmp_path)
        assert len(stop_remote_tools(tmp_path / "remote-pids", fakebin)) == 1
    """)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the inner run imports tests.support
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider").ret == 0


def test_what_a_test_froze_is_given_back_to_the_collector(pytester):
    """A test that freezes the heap, as every dashboard does after its first frame, leaves
    nothing frozen for the next test, whatever their order."""
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_freeze="""
        import gc

        def test_a_freezes():
            gc.freeze()
            assert gc.get_freeze_count() > 0

        def test_b_finds_nothing_frozen():
            assert gc.get_freeze_count() == 0
    """)
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly").ret == 0
