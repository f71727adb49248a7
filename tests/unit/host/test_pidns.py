"""Inside a PID namespace whose /proc cannot look up host PIDs: a GPU's one unmatched PID maps
to the one visible process holding its device node open (real processes, real fd tables)."""

from __future__ import annotations

import os
import subprocess

import pytest

from gputop.host import pidns
from gputop.host.processes import DevicePaths, HostProcesses

BUS = "00000000:18:00.0"


@pytest.fixture
def driver(tmp_path):
    info = tmp_path / "gpus" / "0000:18:00.0"
    info.mkdir(parents=True)
    (info / "information").write_text("Device Minor: 3\n")
    node = tmp_path / "nvidia3"
    node.touch()
    return tmp_path, DevicePaths(driver_info=str(tmp_path / "gpus"),
                                 device_node=str(tmp_path / "nvidia{minor}"))


def holder(path):
    return subprocess.Popen(["sh", "-c", f"exec 3<{path}; exec sleep 60"], pass_fds=())


def test_device_minor_from_the_driver_file(driver):
    root, paths = driver
    assert pidns.device_minor(BUS, paths.driver_info) == 3
    assert pidns.device_minor("00000000:99:00.0", paths.driver_info) is None
    assert pidns.device_minor(None, paths.driver_info) is None


def test_the_sole_holder_is_mapped_and_the_rest_stay_outside(driver):
    root, paths = driver
    proc = holder(root / "nvidia3")
    try:
        host = HostProcesses(pid_view=pidns.PidView(False, False), devices=paths)
        for _ in range(100):  # the shell needs a moment to exec
            if pidns.holders(str(root / "nvidia3")) == {proc.pid}:
                break
            os.sched_yield()
        facts = host.lookup_device(BUS, [9_000_001])
        assert facts[9_000_001].outside_pid_namespace is False
        assert facts[9_000_001].command == "sleep 60"
        assert facts[9_000_001].owner.namespace_pid == proc.pid  # the PID to use here
        # two unmatched PIDs for one candidate: no guess
        two = HostProcesses(pid_view=pidns.PidView(False, False), devices=paths)
        facts = two.lookup_device(BUS, [9_000_001, 9_000_002])
        assert all(f.outside_pid_namespace and f.command is None for f in facts.values())
    finally:
        proc.kill()
        proc.wait()


def test_two_holders_for_one_pid_is_no_guess(driver):
    root, paths = driver
    procs = [holder(root / "nvidia3"), holder(root / "nvidia3")]
    try:
        for _ in range(1000):
            if len(pidns.holders(str(root / "nvidia3"))) == 2:
                break
        host = HostProcesses(pid_view=pidns.PidView(False, False), devices=paths)
        assert host.lookup_device(BUS, [9_000_001])[9_000_001].outside_pid_namespace
    finally:
        for p in procs:
            p.kill()
            p.wait()
