"""A real terminal for the tests: tmux on its own socket (`-L`), read back with `capture-pane -e`,
the tmux server and gputop stopped by PID. `.ci/run` installs tmux."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid

import psutil

from tests.support.paths import ROOT


class Pane:
    def __init__(self, tmp_path, command: str, env: dict[str, str], size=(100, 30)) -> None:
        self.socket = f"gputop-test-{uuid.uuid4().hex[:8]}"
        self.status_file = tmp_path / "status"
        env_args = " ".join(f"{k}={v}" for k, v in env.items())
        shell = (f"cd {ROOT} && env {env_args} {command}; echo $? > {self.status_file}; "
                 "sleep 60")
        self.tmux("new-session", "-d", "-x", str(size[0]), "-y", str(size[1]), "-s", "t",
                  "sh", "-c", shell)
        self.server_pid = int(self.tmux("display", "-p", "-t", "t", "#{pid}").strip())
        self.shell_pid = int(self.tmux("display", "-p", "-t", "t", "#{pane_pid}").strip())

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, timeout=10, check=True).stdout

    def screen(self, escapes: bool = False) -> str:
        return self.tmux("capture-pane", "-p", *(["-e"] if escapes else []), "-t", "t")

    def flag(self, name: str) -> str:
        return self.tmux("display", "-p", "-t", "t", f"#{{{name}}}").strip()

    def wait_for(self, text: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.screen():
                return
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared:\n{self.screen()}")

    def gputop_pid(self) -> int:
        children = psutil.Process(self.shell_pid).children(recursive=True)
        return next(p.pid for p in children if "gputop" in " ".join(p.cmdline()))

    def exit_status(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.status_file.exists() and self.status_file.read_text().strip():
                return int(self.status_file.read_text())
            time.sleep(0.05)
        return None

    def close(self) -> None:
        for pid in (self.shell_pid, self.server_pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
