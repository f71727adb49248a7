"""Where CSV lines go: every write is whole lines, handed to the kernel at once.

A log file is written with unbuffered ``os.write`` calls of complete lines, so `tail -f` sees each
row as soon as it exists and a crash of gputop never leaves a written row half there. Data reach the
page cache, not the disk: rows survive gputop dying, not the machine losing power (no fsync per row).
"""

from __future__ import annotations

import os
from typing import TextIO

from gputop.errors import GputopError


class LogWriteError(GputopError):
    """The log cannot be opened or written (no such folder, no permission, disk full)."""


class FileSink:
    def __init__(self, path: str, append: bool = False) -> None:
        self.path = path
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        flags |= os.O_APPEND if append else os.O_TRUNC
        try:
            self._fd: int | None = os.open(path, flags, 0o644)
        except OSError as exc:
            raise LogWriteError(f"cannot open log file {path}: {exc.strerror or exc}") from None

    def write(self, text: str) -> None:
        if self._fd is None:
            raise LogWriteError(f"log file {self.path} is closed")
        view = memoryview(text.encode("utf-8", "replace"))
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as exc:
            raise LogWriteError(f"cannot write to {self.path}: {exc.strerror or exc}") from None

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as exc:
                raise LogWriteError(f"cannot close {self.path}: {exc.strerror or exc}") from None


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

    def close(self) -> None:
        pass
