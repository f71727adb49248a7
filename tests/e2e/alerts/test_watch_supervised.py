"""`gputop watch` under a real process supervisor (supervisord, started by the test on a unix
socket in its own folder, stopped by PID): killed with SIGKILL it is restarted and re-fires
nothing its journal holds; stopped with SIGTERM it exits 0, which the supervisor records."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.support.paths import ROOT
from tests.support.watch_lab import SCENARIO, journal, logged, settings, wait_until

END = "resolved (warning) thermal-slowdown/"


class Supervisor:
    """supervisord with one program, ``watch``; its control through supervisorctl."""

    def __init__(self, folder: Path, command: str, env: dict[str, str]) -> None:
        self.conf = folder / "supervisord.conf"
        self.log = folder / "supervisord.log"
        environment = ",".join(f'{k}="{v}"' for k, v in env.items())
        self.conf.write_text(f"""\
[supervisord]
nodaemon=true
logfile={self.log}
pidfile={folder}/supervisord.pid
childlogdir={folder}
[unix_http_server]
file={folder}/supervisor.sock
[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface
[supervisorctl]
serverurl=unix://{folder}/supervisor.sock
[program:watch]
command={command}
environment={environment}
autorestart=unexpected
exitcodes=0
startsecs=0
stopsignal=TERM
stopwaitsecs=10
redirect_stderr=true
stdout_logfile={folder}/watch.out
""")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "supervisor.supervisord", "-c", str(self.conf)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: self.pid() > 0, timeout=10, why=lambda: self.log.read_text())

    def ctl(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "supervisor.supervisorctl", "-c",
                               str(self.conf), *args], capture_output=True, text=True, timeout=30)
        return done.stdout

    def pid(self) -> int:
        try:
            return int(self.ctl("pid", "watch").strip() or 0)
        except ValueError:  # not up yet: an error text
            return 0

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # stops its program first
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def test_a_real_supervisor_restarts_watch_which_fires_nothing_twice_and_stops_cleanly(tmp_path):
    config = settings(tmp_path / "config.toml", tmp_path / "alerts.jsonl")
    log = tmp_path / "watch.log"
    command = " ".join([sys.executable, "-m", "gputop", "watch", "--config", str(config),
                        *SCENARIO, "--sim-speed", "200", "--log", str(log)])
    env = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    supervisor = Supervisor(tmp_path, command, env)
    try:
        text = lambda: log.read_text() if log.exists() else ""  # noqa: E731
        wait_until(lambda: "/gpu3/xid13" in text(), timeout=20, why=text)
        first = supervisor.pid()
        os.kill(first, signal.SIGKILL)  # a crash: the supervisor's to restart
        wait_until(lambda: supervisor.pid() not in (0, first), timeout=20,
                   why=lambda: supervisor.log.read_text())
        before = text()
        wait_until(lambda: END in text()[len(before):], timeout=30, why=text)
        assert "watch: stopped" in supervisor.ctl("stop", "watch")
        events = supervisor.log.read_text()
        assert "exited: watch (terminated by SIGKILL; not expected)" in events
        assert "stopped: watch (exit status 0)" in events, events  # SIGTERM: a clean exit
    finally:
        supervisor.close()
    assert supervisor.process.poll() is not None  # and the supervisor is gone, by its PID
    first_run = fired_keys(before)
    second_run = fired_keys(text()[len(before):])
    assert {k.split("/")[0] for k in first_run} >= {"xid", "gpu-lost"}
    assert not first_run & second_run  # nothing the journal held fired again
    fired = Counter(a["key"] for a in journal(tmp_path / "alerts.jsonl")
                    if a["state"] == "firing")
    assert set(fired.values()) == {1}, fired


def fired_keys(log_text: str) -> set[str]:
    """The keys the --log lines (each after its time stamp) say fired."""
    lines = [line.split(" ", 1)[1] for line in log_text.splitlines() if " " in line]
    return {key for key, state in logged(lines) if state == "firing"}
