"""A root folder laid out as a sysfs backend reads a real node: ROOT/sys/class/drm a captured
tree, ROOT/proc/PID/fd and fdinfo a process's DRM files."""

from __future__ import annotations

import os
from pathlib import Path


def mount_tree(root: Path, tree: Path | None) -> Path:
    """``root`` with ROOT/sys/class/drm as ``tree`` (the captures are relative to
    /sys/class/drm); with no tree, an empty /sys/class/drm."""
    drm = root / "sys" / "class" / "drm"
    drm.parent.mkdir(parents=True, exist_ok=True)
    if tree is None:
        drm.mkdir()
    else:
        drm.symlink_to(tree, target_is_directory=True)
    return root


def open_drm_file(root: Path, pid: int, fd: int, fdinfo: Path) -> None:
    """ROOT/proc/PID/fd/FD a link into /dev/dri, and its fdinfo the captured text."""
    base = root / "proc" / str(pid)
    (base / "fd").mkdir(parents=True, exist_ok=True)
    (base / "fdinfo").mkdir(parents=True, exist_ok=True)
    os.symlink("/dev/dri/renderD128", base / "fd" / str(fd))
    (base / "fdinfo" / str(fd)).symlink_to(fdinfo)
