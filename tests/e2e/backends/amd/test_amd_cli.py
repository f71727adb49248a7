"""`gputop --backend amd --sysfs-root ROOT` as a process, on a captured card: the JSON and text
snapshots, and one line where the root holds no amdgpu card."""

from __future__ import annotations

import json
import subprocess

from tests.support.amd import install_ids, mount
from tests.support.paths import gputop_cmd

RX6900XT = "sysfs_RX6900XT-Navi21-RDNA2_amdgpu_lact-snapshot_gpu_metrics"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(gputop_cmd(*args), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_snapshot_json_of_a_captured_card(tmp_path):
    root = mount(tmp_path, RX6900XT)
    install_ids(root)
    r = run("--backend", "amd", "--sysfs-root", str(root), "snapshot", "--json")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    doc = json.loads(r.stdout)
    assert doc["backend"] == "amd"
    (dev,) = doc["devices"]
    assert (dev["name"], dev["vendor"], dev["pci_bus_id"]) \
        == ("AMD Radeon RX 6900 XT", "amd", "0000:0c:00.0")
    assert (dev["utilization_gpu_pct"], dev["power_draw_w"], dev["power_limit_w"]) == (3, 36.0, 289.0)
    assert dev["memory_used_mib"] * 1024 * 1024 == 668274688
    assert dev["energy_j"] is None and dev["ecc_mode"] is None  # not printed by the card: null
    assert dev["processes"] == []


def test_snapshot_text_of_a_captured_card(tmp_path):
    root = mount(tmp_path, RX6900XT)
    r = run("--backend", "amd", "--sysfs-root", str(root), "snapshot", "--color", "never")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("[0]")]
    assert "AMD GPU 1002:73BF" in line and "3 %" in line and "36 / 289 W" in line


def test_a_root_without_an_amdgpu_card_is_one_line(tmp_path):
    root = mount(tmp_path, None)
    r = run("--backend", "amd", "--sysfs-root", str(root), "snapshot", "--json")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines() == [
        f"gputop: amdgpu: no card under {root}/sys/class/drm is driven by amdgpu"]
