"""A log whose write fails part way (EIO, ENOSPC, EFBIG through a faked ``os.write`` on a real
file: EIO cannot be had honestly without a failing device) keeps only whole rows."""

from __future__ import annotations

import errno
import os
import re

import pytest

from gputop.commands import query as query_cli
from gputop.query.sink import FileSink, LogWriteError
from tests.support.query import CUT_LOG_FIELDS, SIM_GPUS, whole_rows


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
        query_cli.main(["--backend", "sim", f"--query-gpu={CUT_LOG_FIELDS}", "--format=csv",
                        "-lms", "5", "-f", str(log)])
    rows = whole_rows(log, f"gputop: {info.value}\n", re.escape(os.strerror(code)))
    assert len(rows) == 2 * SIM_GPUS


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
