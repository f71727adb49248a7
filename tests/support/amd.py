"""Captured amdgpu sysfs trees (tests/fixtures/amd, LACT snapshots) mounted under a root folder
as the AMD backend reads a real node: ROOT/sys/class/drm/cardN/device/…, ROOT/proc/PID/fdinfo."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.drm import mount_tree
from tests.support.paths import FIXTURES

AMD = FIXTURES / "amd"
PHOENIX_TREE = "sysfs_Phoenix-APU-RDNA3_amdgpu_lact-snapshot_gpu_metrics_kfd"
RADEON_TREE = "sysfs_HD7870-Pitcairn-GCN1_radeon-driver_lact-snapshot"
AMDGPU_TREES = sorted(p.name for p in AMD.glob("sysfs_*_amdgpu_*"))
IDS_FILE = AMD / "amdgpu.ids_libdrm-2.4.114_debian-libdrm-common-2.4.114-1"
FDINFO_GFX = AMD / "fdinfo_amdgpu_client30_gfx_patch-v1-2024-05-06_INDENTED1.txt"
FDINFO_COMPUTE = AMD / "fdinfo_amdgpu_client4_compute_patch-v2-2024-05-20_INDENTED1.txt"
# the tree the advisor's tests write a power cap to (a copy of it): its card's power1_cap and
# power1_cap_min, in µW
RX7900XTX = "sysfs_RX7900XTX-Navi31-RDNA3_amdgpu_lact-snapshot"
ORIGINAL_UW = 290000000
MIN_UW = 261000000


def mount(root: Path, tree: str | None) -> Path:
    """``root`` with ROOT/sys/class/drm as the captured tree (the captures are relative to
    /sys/class/drm); with no tree, an empty /sys/class/drm."""
    return mount_tree(root, AMD / tree if tree is not None else None)


def install_ids(root: Path) -> None:
    """libdrm's amdgpu.ids where distributions install it."""
    target = root / "usr" / "share" / "libdrm" / "amdgpu.ids"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(IDS_FILE)


def tree_file(tree: str, pattern: str) -> Path | None:
    """The captured file matching ``pattern`` (a glob under the tree's card folder), if any."""
    found = sorted((AMD / tree).glob("card*/device/" + pattern))
    return found[0] if found else None


def tree_text(tree: str, pattern: str) -> str | None:
    path = tree_file(tree, pattern)
    if path is None:
        return None
    return path.read_bytes().split(b"\0", 1)[0].decode().strip()


def writable_root(tmp_path: Path) -> tuple[Path, Path]:
    """A root whose sys/class/drm is a writable copy of the capture, and its power1_cap."""
    tree = tmp_path / "tree"
    shutil.copytree(AMD / RX7900XTX, tree)
    root = mount_tree(tmp_path / "root", tree)
    (cap,) = tree.glob("card0/device/hwmon/hwmon*/power1_cap")
    assert int(cap.read_text()) == ORIGINAL_UW
    return root, cap
