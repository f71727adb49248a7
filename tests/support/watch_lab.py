"""`gputop watch` as a real process for the e2e tests: its settings file, its log lines read
as they come (each with when it arrived), and its stop by PID."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tests.support.paths import gputop_cmd

SCENARIO = ("--backend", "sim", "--scenario", "xid-thermal", "--interval", "2")
PROXIES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
# What the xid-thermal scenario fires, rule by rule, through its end (~165 s of its clock): the
# two Xids and GPU 1's loss (never back), GPU 2's heat (the `hot` rule the settings add, and the
# default thermal-slowdown), each fired once and resolved once.
EXPECTED = Counter({
    ("xid", 1, "firing"): 1, ("gpu-lost", 1, "firing"): 1, ("xid", 3, "firing"): 1,
    ("hot", 2, "firing"): 1, ("hot", 2, "resolved"): 1,
    ("thermal-slowdown", 2, "firing"): 1, ("thermal-slowdown", 2, "resolved"): 1,
})
HOT_FOR_S = 10.0  # the `hot` rule's duration
INTERVAL_S = 2.0


def settings(path: Path, journal: Path | None, hook_url: str | None = None,
             command_out: Path | None = None, timeout_s: float = 2.0) -> Path:
    """Write a settings file: the defaults plus `hot` (GPU 2 over 80 °C for 10 s), a webhook
    channel to ``hook_url`` (no retry) and a command channel appending each alert's JSON to
    ``command_out``. ``journal`` None: the default one."""
    text = ["[alerts]\n" + (f'journal = "{journal}"\n' if journal is not None else ""),
            f'[[alerts.rule]]\nname = "hot"\nwhen = "temperature_c > 80 for {HOT_FOR_S:g}s"\n'
            'gpus = [2]\n']
    if hook_url is not None:
        text.append(f'[alerts.channel.hook]\ntype = "webhook"\nurl = "{hook_url}"\n'
                    f"timeout = {timeout_s}\nretries = 0\n")
    if command_out is not None:
        text.append('[alerts.channel.script]\ntype = "command"\n'
                    f"command = ['/bin/sh', '-c', 'cat >> {command_out}; echo >> {command_out}']\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(text))
    return path


def quiet_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with no proxy (the receiver is on 127.0.0.1), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in PROXIES and k != "JOURNAL_STREAM"}
    env.update(extra or {})
    return env


class Watch:
    """A running ``argv`` (a gputop watch): its stderr lines, each with the monotonic time it
    arrived, collected on a thread."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self.proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, env=dict(env))
        self.lines: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def gputop(cls, *args: str, env: Mapping[str, str] | None = None) -> Watch:
        return cls(gputop_cmd("watch", *args), quiet_env(env))

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._lock:
                self.lines.append((time.monotonic(), line.rstrip("\n")))

    def text(self) -> list[str]:
        with self._lock:
            return [line for _, line in self.lines]

    def arrived(self, needle: str) -> float:
        """Return when the first line holding ``needle`` arrived."""
        with self._lock:
            return next(t for t, line in self.lines if needle in line)

    def wait_for(self, needle: str, timeout: float = 10.0) -> None:
        wait_until(lambda: any(needle in line for line in self.text()), timeout,
                   lambda: f"no line with {needle!r}; rc={self.proc.poll()}; lines:\n"
                           + "\n".join(self.text()))

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> tuple[int, float]:
        """Send ``sig`` to the process by its PID; return its exit status and how long it took."""
        start = time.monotonic()
        os.kill(self.proc.pid, sig)
        rc = self.proc.wait(timeout)
        spent = time.monotonic() - start
        self._reader.join(2)
        return rc, spent

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def wait_until(check: Callable[[], bool], timeout: float = 10.0,
               why: Callable[[], str] = lambda: "timed out") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(why())
        time.sleep(0.02)


def logged(lines: Sequence[str]) -> Counter[tuple[str, str]]:
    """Count the alert lines ``alert STATE (SEVERITY) KEY: …`` by (key, state)."""
    out: Counter[tuple[str, str]] = Counter()
    for line in lines:
        words = line.split(" ")
        if len(words) > 5 and words[2] == "alert":
            out[(words[5].rstrip(":"), words[3])] += 1
    return out


def by_rule(alerts: Sequence[dict]) -> Counter[tuple[str, int | None, str]]:
    """Count alerts (as `Alert.to_json` writes them) by (rule, gpu, state)."""
    return Counter((a["rule"], a["gpu"], a["state"]) for a in alerts)


def journal(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def command_alerts(path: Path) -> list[dict]:
    """The alerts the command channel appended (the generic body, one per line)."""
    if not path.exists():
        return []
    return [json.loads(line)["alert"] for line in path.read_text().splitlines() if line.strip()]
