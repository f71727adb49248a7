"""A log that hits a full disk, the file size limit or an I/O error keeps only whole rows.

The full disk is real: a 64 KiB tmpfs mounted by the test (CI runs the tests as root). EFBIG is
real too: the file size limit (RLIMIT_FSIZE) of the gputop child. EIO cannot be had honestly on
this machine without a failing device, so it is tested through a faked ``os.write`` on a real file.
"""

from __future__ import annotations

import errno
import os
import re
import resource
import signal
import subprocess
from pathlib import Path

import pytest

from gputop.backends import open_backend
from gputop.backends.base import BackendOptions
from gputop.commands import query as query_cli
from gputop.query.recorder import Recorder
from gputop.query.sink import FileSink, LogWriteError
from tests.support.paths import ROOT, gputop_cmd

FIELDS = "timestamp,index,name,utilization.gpu,memory.used,power.draw,clocks.sm"
COLUMNS = FIELDS.count(",") + 1
GPUS = 8  # the simulator's default node


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


def _whole_rows(log: Path, stderr: str, reason: str) -> list[str]:
    """Check the one-line error and the file; return the rows."""
    assert "Traceback" not in stderr
    match = re.fullmatch(rf"gputop: cannot write to {re.escape(str(log))}: {reason} "
                         r"\(cut back to its last whole row: (\d+) rows?\)\n", stderr)
    assert match, stderr
    data = log.read_bytes()
    assert data.endswith(b"\n"), data[-80:]
    lines = data.decode().split("\n")[:-1]
    assert lines[0].startswith("timestamp, index, name, utilization.gpu [%]")
    rows = lines[1:]
    assert len(rows) == int(match[1])
    assert all(len(row.split(", ")) == COLUMNS for row in rows)
    assert len(rows) % GPUS == 0  # a sample's rows are one write: whole samples only
    return rows


def _query(log: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(gputop_cmd("--backend", "sim", f"--query-gpu={FIELDS}", "--format=csv",
                                     "-lms", "10", "-f", str(log)),
                          capture_output=True, text=True, cwd=ROOT, timeout=120, **kwargs)


def test_full_disk_cuts_the_log_back_to_its_last_whole_row(small_disk: Path):
    log = small_disk / "gpus.csv"
    proc = _query(log)
    assert proc.returncode == 1 and proc.stdout == ""
    rows = _whole_rows(log, proc.stderr, "No space left on device")
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
    rows = _whole_rows(log, proc.stderr, "File too large")
    assert limit - 2000 < log.stat().st_size <= limit
    assert rows


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC, errno.EFBIG],
                         ids=["EIO", "ENOSPC", "EFBIG"])
def test_a_short_write_then_an_error_leaves_whole_rows(monkeypatch, tmp_path, capsys, code):
    """The kernel takes part of the third sample, then fails: the file loses that part."""
    from gputop.query import sink as sink_mod

    real_write = os.write
    calls = {"n": 0}

    def failing_write(fd, data):
        calls["n"] += 1
        if calls["n"] == 4:  # header, two samples, then half of the third
            return real_write(fd, bytes(data[: len(data) // 2 + 3]))
        if calls["n"] == 5:
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)

    monkeypatch.setattr(sink_mod.os, "write", failing_write)
    log = tmp_path / "gpus.csv"
    with pytest.raises(LogWriteError) as info:
        query_cli.main(["--backend", "sim", f"--query-gpu={FIELDS}", "--format=csv",
                        "-lms", "5", "-f", str(log)])
    rows = _whole_rows(log, f"gputop: {info.value}\n", re.escape(os.strerror(code)))
    assert len(rows) == 2 * GPUS


def test_recorder_on_a_full_disk_keeps_whole_rows(small_disk: Path):
    backend = open_backend("sim", BackendOptions(scenario="training"))
    path = small_disk / "rec.csv"
    rec = Recorder(str(path), FIELDS)
    with pytest.raises(LogWriteError) as info:
        for _ in range(10_000):
            rec.write(backend.sample())
    assert rec.closed
    rows = _whole_rows(path, f"gputop: {info.value}\n", "No space left on device")
    assert len(rows) == rec.rows


def test_a_header_that_does_not_fit_leaves_an_empty_file(monkeypatch, tmp_path):
    from gputop.query import sink as sink_mod

    real_write = os.write

    def short_then_full(fd, data):
        monkeypatch.setattr(sink_mod.os, "write", _raise(errno.ENOSPC))
        return real_write(fd, bytes(data[:5]))

    monkeypatch.setattr(sink_mod.os, "write", short_then_full)
    path = tmp_path / "x.csv"
    sink = FileSink(str(path))
    with pytest.raises(LogWriteError, match=r"\(cut back to its last whole row: 0 rows\)$"):
        sink.write_header("timestamp, index\n")
    assert path.read_bytes() == b""


def _raise(code: int):
    def write(fd, data):
        raise OSError(code, os.strerror(code))
    return write
