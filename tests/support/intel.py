"""Captured i915 and xe sysfs trees (tests/fixtures/intel, LACT snapshots) mounted under a root
folder as the Intel backend reads a real node: ROOT/sys/class/drm/cardN/…"""

from __future__ import annotations

from pathlib import Path

from tests.support.drm import mount_tree
from tests.support.paths import FIXTURES

INTEL = FIXTURES / "intel"
A380 = "sysfs_Arc-A380-DG2_i915_lact-snapshot"
B580 = "sysfs_Arc-B580-BMG_xe_kernel-6.16_lact-snapshot"
B580_FAN = "sysfs_Arc-B580-BMG_xe_patched-fan-kernel_lact-snapshot"
COMETLAKE = "sysfs_CometLake-UHD-iGPU_i915_lact-snapshot"
TREES = sorted(p.name for p in INTEL.glob("sysfs_*"))
FDINFO_XE = INTEL / "fdinfo_xe_client3_kernel-doc-example_COMMENT-PREFIXED.txt"
COMMENT_PREFIX = " * \t"


def fdinfo_xe() -> str:
    """The kernel's xe fdinfo example as a process's fdinfo reads: its lines without the C
    comment's prefix they carry in xe_drm_client.c (tests/fixtures/intel/SOURCES.md)."""
    lines = FDINFO_XE.read_text().splitlines()
    assert all(line.startswith(COMMENT_PREFIX) for line in lines)
    return "".join(line[len(COMMENT_PREFIX):] + "\n" for line in lines)


def mount(root: Path, tree: str | None) -> Path:
    """``root`` with ROOT/sys/class/drm as the captured tree; with no tree, an empty one."""
    return mount_tree(root, INTEL / tree if tree is not None else None)


def tree_file(tree: str, pattern: str) -> Path | None:
    """The captured file matching ``pattern`` (a glob under the tree's cardN folder), if any."""
    found = sorted((INTEL / tree).glob("card*/" + pattern))
    return found[0] if found else None


def tree_int(tree: str, pattern: str) -> int | None:
    """The integer in the captured file matching ``pattern``, if any."""
    path = tree_file(tree, pattern)
    return int(path.read_text().split()[0]) if path is not None else None
