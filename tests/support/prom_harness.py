"""A real Prometheus server and real `gputop exporter` processes on 127.0.0.1, for the exporter
and cluster tests and the scale benchmark. Everything listens on loopback ports chosen free,
Prometheus keeps its data in a temporary folder, and each process is stopped by its PID."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import ROOT
from tests.support.ssh_harness import free_port


def find(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise RuntimeError(f"{tool} not found: scripts/install-test-deps.sh installs Debian's prometheus package")
    return path


def get(url: str, timeout: float = 2.0, headers: dict[str, str] | None = None,
        context=None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_for(predicate, timeout: float, what: str, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except OSError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what} after {timeout:.0f} s")
        time.sleep(step)


def stop(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout)


@dataclass
class Exporter:
    port: int
    proc: subprocess.Popen
    args: tuple[str, ...]

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def metrics(self) -> str:
        status, body = get(f"http://{self.target}/metrics")
        assert status == 200, body
        return body.decode()


def start_exporter(*args: str, port: int | None = None,
                   env: dict[str, str] | None = None) -> Exporter:
    port = port or free_port()
    argv = [sys.executable, "-m", "gputop", "exporter", "--listen", f"127.0.0.1:{port}", *args]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env)
    exporter = Exporter(port, proc, tuple(args))
    try:
        wait_for(lambda: proc.poll() is not None or
                 get(f"http://{exporter.target}/health", 0.5)[0] == 200, 20.0, "the exporter")
    except BaseException:
        stop(proc)
        raise
    if proc.poll() is not None:
        raise RuntimeError(f"exporter exited: {proc.stderr.read().decode()}")
    return exporter


class Prometheus:
    """``prometheus`` scraping the given targets every ``interval`` seconds as job ``job``,
    evaluating ``rule_files`` (each group at its own interval, else every ``interval``)."""

    def __init__(self, workdir: Path, targets: list[str], job: str = "gpus",
                 interval: str = "1s", extra_flags: tuple[str, ...] = (),
                 metric_relabel: list[dict] | None = None,
                 rule_files: tuple[Path, ...] = ()) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = workdir / "prometheus.yml"
        config.write_text(json.dumps({  # YAML is a superset of JSON
            "global": {"scrape_interval": interval, "scrape_timeout": "900ms"
                       if interval == "1s" else "5s",
                       "evaluation_interval": interval if rule_files else "1m"},
            "rule_files": [str(f) for f in rule_files],
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}],
                                **({"metric_relabel_configs": metric_relabel}
                                   if metric_relabel else {})}],
        }))
        argv = [find("prometheus"), f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn", *extra_flags]
        self.log = open(workdir / "prometheus.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(argv, cwd=workdir, stdout=self.log, stderr=self.log)
        try:
            wait_for(lambda: self.proc.poll() is not None or
                     get(f"{self.url}/-/ready", 0.5)[0] == 200, 30.0, "prometheus")
            if self.proc.poll() is not None:
                raise RuntimeError("prometheus exited: " +
                                   (workdir / "prometheus.log").read_text()[-2000:])
        except BaseException:
            self.stop()
            raise

    def query(self, promql: str) -> list[dict]:
        status, body = get(f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
        doc = json.loads(body)
        assert status == 200 and doc["status"] == "success", body
        return doc["data"]["result"]

    def api(self, path: str) -> dict:
        """``/api/v1/PATH``'s data."""
        status, body = get(f"{self.url}/api/v1/{path}")
        doc = json.loads(body)
        assert status == 200 and doc["status"] == "success", body
        return doc["data"]

    def stop(self) -> None:
        stop(self.proc)
        self.log.close()
