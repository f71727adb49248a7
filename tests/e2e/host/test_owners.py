"""/proc/PID/stat and status of a real process named "a) (b": the comm, parent and uid parsers."""

import os
import subprocess
import sys
from pathlib import Path

from gputop.host.owners import (
    parse_ppid,
    parse_stat_comm_ppid,
    parse_uid,
)

# A child that names itself "a) (b" (the kernel's comm, shown in /proc/PID/stat unescaped, and
# in /proc/PID/status) and waits: what the stat and status parsers are checked on.
_ODD_NAME = ("import sys\n"
             "with open('/proc/self/comm', 'w') as f: f.write('a) (b')\n"
             "print('named', flush=True)\n"
             "sys.stdin.read()\n")


def test_stat_and_status_of_a_real_process_with_an_odd_name():
    child = subprocess.Popen([sys.executable, "-c", _ODD_NAME], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "named\n"
        stat = Path(f"/proc/{child.pid}/stat").read_bytes()
        status = Path(f"/proc/{child.pid}/status").read_text()
    finally:
        child.stdin.close()
        child.wait()
    assert parse_stat_comm_ppid(stat) == ("a) (b", os.getpid())
    assert parse_ppid(status) == os.getpid()
    assert parse_uid(status) == os.getuid()
    assert parse_stat_comm_ppid(b"") is None
    assert parse_ppid("Name:\tx\n") is None and parse_uid("Name:\tx\n") is None
