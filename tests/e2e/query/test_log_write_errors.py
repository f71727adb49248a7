"""A log that hits a real full disk (a 64 KiB tmpfs the test mounts; CI runs as root) or the
file size limit (RLIMIT_FSIZE of the gputop child) is cut back to its last whole row."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
from pathlib import Path

import pytest

from gputop.backends import open_backend
from gputop.backends.base import BackendOptions
from gputop.query.recorder import Recorder
from gputop.query.sink import LogWriteError
from tests.support.paths import ROOT, gputop_cmd
from tests.support.query import CUT_LOG_FIELDS, whole_rows


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 64 KiB tmpfs, unmounted and removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs the tests as root)")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)
        disk.rmdir()


def _query(log: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(gputop_cmd("--backend", "sim", f"--query-gpu={CUT_LOG_FIELDS}", "--format=csv",
                                     "-lms", "10", "-f", str(log)),
                          capture_output=True, text=True, cwd=ROOT, timeout=120, **kwargs)


def test_full_disk_cuts_the_log_back_to_its_last_whole_row(small_disk: Path):
    log = small_disk / "gpus.csv"
    proc = _query(log)
    assert proc.returncode == 1 and proc.stdout == ""
    rows = whole_rows(log, proc.stderr, "No space left on device")
    assert log.stat().st_size > 48 * 1024  # the disk did fill
    assert len(rows) > 50


def _file_size_limit(limit: int):
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not death by signal
    return preexec


def test_file_size_limit_cuts_the_log_back_to_its_last_whole_row(tmp_path: Path):
    log = tmp_path / "gpus.csv"
    limit = 20_011  # not a whole number of rows: the last write is cut short by the kernel
    proc = _query(log, preexec_fn=_file_size_limit(limit),
                  env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 1 and proc.stdout == ""
    rows = whole_rows(log, proc.stderr, "File too large")
    assert limit - 2000 < log.stat().st_size <= limit
    assert rows


def test_recorder_on_a_full_disk_keeps_whole_rows(small_disk: Path):
    backend = open_backend("sim", BackendOptions(scenario="training"))
    path = small_disk / "rec.csv"
    rec = Recorder(str(path), CUT_LOG_FIELDS)
    with pytest.raises(LogWriteError) as info:
        for _ in range(10_000):
            rec.write(backend.sample())
    assert rec.closed
    rows = whole_rows(path, f"gputop: {info.value}\n", "No space left on device")
    assert len(rows) == rec.rows


