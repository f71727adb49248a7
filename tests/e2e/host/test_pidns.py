"""Inside a PID namespace whose /proc cannot look up host PIDs: a GPU's one unmatched PID maps
to the one visible process holding its device node open (real processes, real fd tables)."""

from __future__ import annotations

import os
import subprocess

from gputop.host import pidns
from gputop.host.processes import HostProcesses
from tests.support.device_node import BUS, driver_fixture  # noqa: F401 - the `driver` fixture


def test_detect_on_this_machine_and_in_a_fresh_namespace():
    assert pidns.detect().in_host_namespace is (os.stat("/proc/self/ns/pid").st_ino
                                                == pidns.INIT_PID_NS_INODE)
    code = ("from gputop.host.pidns import detect; v = detect();"
            "print(v.in_host_namespace, v.proc_is_host)")
    own = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "python3", "-c", code],
                         capture_output=True, text=True, timeout=30, env={**os.environ,
                         "PYTHONPATH": os.getcwd()})
    assert own.stdout.split() == ["False", "False"], own.stderr


def holder(path):
    return subprocess.Popen(["sh", "-c", f"exec 3<{path}; exec sleep 60"], pass_fds=())


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
