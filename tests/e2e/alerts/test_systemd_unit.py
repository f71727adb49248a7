"""The systemd unit the docs ship (docs/gputop-watch.service), checked as far as this machine
allows.

Verified: ``systemd-analyze verify`` accepts the unit, with its ExecStart pointed at a real
gputop, without a warning; the unit's ExecStart command line (read from the unit, not
retyped, with the simulator's options added) runs as systemd would start it: a child with the
unit's environment only (its ``%E`` and ``%S`` resolved to folders of the test, the
StateDirectory made); killed with SIGKILL and started again, as ``Restart=on-failure`` does, it
re-fires nothing its journal holds; the unit's KillSignal stops it with exit 0 well within
TimeoutStopSec.

Not verified: no systemd manager ran it (systemd is not PID 1 here and ``systemd --user`` does
not start), so the sandboxing keys (ProtectSystem=, ProtectHome=, PrivateTmp=), the restart
itself, the journal's reading of the ``<N>`` priority prefix, and ordering after the network
are systemd's documented behaviour, not observed. The child runs this checkout's gputop
(PYTHONPATH), where the unit would run the installed one.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tests.support.watch_lab import SCENARIO, Watch, journal, logged, settings

UNIT = ROOT / "docs" / "gputop-watch.service"
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # its default
END = "resolved (warning) thermal-slowdown/"


def read_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """Return the unit's sections, each key with its values in order (comments dropped)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def real_gputop(tmp_path: Path) -> str:
    """The installed gputop beside this Python, else a script that runs it as that Python."""
    found = shutil.which("gputop", path=str(Path(sys.executable).parent))
    if found:
        return found
    script = tmp_path / "bin" / "gputop"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m gputop \"$@\"\n")
    script.chmod(0o755)
    return str(script)


def test_the_shipped_unit_verifies_runs_restarts_and_stops_as_systemd_would(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("no systemd-analyze on this machine")
    text = UNIT.read_text()
    unit = read_unit(text)
    service = unit["Service"]
    (exec_start,) = service["ExecStart"]
    program, *args = shlex.split(exec_start)
    gputop = real_gputop(tmp_path)

    copy = tmp_path / "gputop-watch.service"
    copy.write_text(text.replace(f"ExecStart={program} ", f"ExecStart={gputop} "))
    verified = subprocess.run([analyze, "verify", "--man=no", str(copy)], capture_output=True,
                              text=True, timeout=60)
    assert verified.returncode == 0 and verified.stdout + verified.stderr == "", verified

    # As systemd starts it: its environment, %E (/etc) and %S (/var/lib) resolved, here.
    etc, state = tmp_path / "etc", tmp_path / "var" / "lib"
    env = {"PATH": SYSTEMD_PATH, "PYTHONPATH": str(ROOT)}
    for assignment in service["Environment"]:
        name, _, value = assignment.partition("=")
        env[name] = value.replace("%E", str(etc)).replace("%S", str(state))
    assert "%" not in "".join(env.values()) + exec_start
    for name in service["StateDirectory"]:
        (state / name).mkdir(parents=True, mode=int(service["StateDirectoryMode"][0], 8))
    settings(Path(env["GPUTOP_CONFIG"]), None)  # the defaults and `hot`; the default journal
    argv = [gputop, *args, *SCENARIO, "--sim-speed", "200"]

    # Killed (SIGKILL: a failure to Restart=on-failure) after the Xids fired, then started again.
    assert service["Restart"] == ["on-failure"]
    first = Watch(argv, env)
    try:
        first.wait_for("/gpu3/xid13")
        rc, _ = first.stop(signal.SIGKILL)
    finally:
        first.kill()
    assert rc == -signal.SIGKILL
    second = Watch(argv, env)
    try:
        second.wait_for(END)  # past every time the scenario fires something
        (kill_signal,) = service["KillSignal"]
        rc, spent = second.stop(signal.Signals[kill_signal])
    finally:
        second.kill()
    (stop_timeout,) = service["TimeoutStopSec"]
    assert rc == 0 and spent < min(2.0, float(stop_timeout.rstrip("s"))), (rc, spent)

    before = {key for key, state in logged(first.text()) if state == "firing"}
    again = {key for key, state in logged(second.text()) if state == "firing"}
    assert {k.split("/")[0] for k in before} >= {"xid", "gpu-lost"}
    assert not before & again, before & again  # nothing the journal held fired twice
    alerts = journal(state / "gputop" / "alerts.jsonl")
    fired = Counter(a["key"] for a in alerts if a["state"] == "firing")
    assert set(fired.values()) == {1}, fired
    assert os.stat(state / "gputop" / "alerts.jsonl").st_mode & 0o077 == 0
