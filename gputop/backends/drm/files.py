"""Read one value per sysfs file under a root folder: None where a file is absent or unreadable.

Every read goes through one `Files`, which remembers the files the kernel refused for lack of
permission, so that the backend can say once what would need more. A refusal of a file whose mode
lets us read it is the driver declining to answer (amdgpu returns EPERM for a GPU that is
runtime-suspended rather than wake it): no value, and nothing more to ask for.
"""

from __future__ import annotations

import os

MAX_BYTES = 64 * 1024  # the largest text attribute read (pp_dpm tables are a few hundred bytes)


class Files:
    """Text and integer reads of sysfs (and procfs) files, with the refusals remembered."""

    def __init__(self) -> None:
        self.denied: set[str] = set()

    def text(self, path: str) -> str | None:
        """The file's text up to its first NUL byte, stripped; None where it cannot be read.

        Some captured trees pad a value with NUL bytes to 4096 (what a raw page read returns);
        the kernel's own attributes end at their newline."""
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_BYTES)
        except PermissionError:
            if not os.access(path, os.R_OK):
                self.denied.add(path)
            return None
        except OSError:  # absent, or an attribute the device does not answer (EINVAL, ENODEV)
            return None
        return data.split(b"\0", 1)[0].decode("utf-8", "replace").strip()

    def integer(self, path: str) -> int | None:
        """The file's value as an integer (sysfs prints them in decimal); None otherwise."""
        text = self.text(path)
        if not text:
            return None
        try:
            return int(text.split()[0])
        except ValueError:
            return None
