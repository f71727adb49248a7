"""Where CSV lines go: every write is whole lines, handed to the kernel at once.

A log file is written with unbuffered ``os.write`` calls of complete lines, so `tail -f` sees each
row as soon as it exists and a crash of gputop never leaves a written row half there. Data reach the
page cache, not the disk: rows survive gputop dying, not the machine losing power (no fsync per row).

A write can also fail halfway: the kernel takes part of a sample's rows (a short write) and then
refuses the rest (ENOSPC on a full disk, EFBIG past the file size limit, EIO). The file is then cut
back to where that write began, so it ends with its last whole sample, and the error says how many
rows it holds.
"""

from __future__ import annotations

import os
import stat
from typing import TextIO

from gputop.core.errors import GputopError


class LogWriteError(GputopError):
    """The log cannot be opened or written (no such folder, no permission, disk full)."""


class FileSink:
    """A log file, created or truncated. ``write_header`` writes lines that are not rows."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.rows = 0  # whole rows in the file
        self._end = 0  # the file's size after the last whole write
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        try:
            self._fd: int | None = os.open(path, flags, 0o644)
        except OSError as exc:
            raise LogWriteError(f"cannot open log file {path}: {exc.strerror or exc}") from None
        # Only a regular file can be cut back (a pipe or /dev/full has nothing to cut).
        self._regular = stat.S_ISREG(os.fstat(self._fd).st_mode)

    def write(self, text: str) -> None:
        self._write(text)
        self.rows += text.count("\n")

    def write_header(self, text: str) -> None:
        self._write(text)

    def _write(self, text: str) -> None:
        if self._fd is None:
            raise LogWriteError(f"log file {self.path} is closed")
        data = text.encode("utf-8", "replace")
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as exc:
            raise LogWriteError(self._cut_back(f"cannot write to {self.path}: "
                                               f"{exc.strerror or exc}")) from None
        self._end += len(data)

    def _cut_back(self, error: str) -> str:
        """Drop what the failed write left of its lines; return the error line to show."""
        if not self._regular:
            return error
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, self._end)
            os.lseek(self._fd, self._end, os.SEEK_SET)
        except OSError as exc:
            return f"{error} (and cannot cut it back to its last whole row: " \
                   f"{exc.strerror or exc})"
        return f"{error} (cut back to its last whole row: {_rows(self.rows)})"

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as exc:
                raise LogWriteError(f"cannot close {self.path}: {exc.strerror or exc}") from None


def _rows(n: int) -> str:
    return "1 row" if n == 1 else f"{n} rows"


class StreamSink:
    """A text stream (stdout): flushed after every batch of lines."""

    def __init__(self, stream: TextIO, name: str = "stdout") -> None:
        self.stream = stream
        self.path = name

    def write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise LogWriteError(f"cannot write to {self.path}: {exc.strerror or exc}") from None

    write_header = write

    def close(self) -> None:
        pass
