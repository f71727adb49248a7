"""Inside a PID namespace whose /proc cannot look up host PIDs: a GPU's one unmatched PID maps
to the one visible process holding its device node open (real processes, real fd tables)."""

from __future__ import annotations

import os
import subprocess

from gputop.host import pidns


def test_detect_on_this_machine_and_in_a_fresh_namespace():
    assert pidns.detect().in_host_namespace is (os.stat("/proc/self/ns/pid").st_ino
                                                == pidns.INIT_PID_NS_INODE)
    code = ("from gputop.host.pidns import detect; v = detect();"
            "print(v.in_host_namespace, v.proc_is_host)")
    own = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "python3", "-c", code],
                         capture_output=True, text=True, timeout=30, env={**os.environ,
                         "PYTHONPATH": os.getcwd()})
    assert own.stdout.split() == ["False", "False"], own.stderr
