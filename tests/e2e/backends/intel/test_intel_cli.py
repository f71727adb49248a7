"""`gputop --backend intel --sysfs-root ROOT` as a process, on captured cards: the JSON snapshot,
and one line where the root holds no i915 or xe card."""

from __future__ import annotations

import json
import subprocess

from tests.support.intel import A380, COMETLAKE, mount
from tests.support.paths import gputop_cmd


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(gputop_cmd(*args), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_snapshot_json_of_a_captured_card(tmp_path):
    root = mount(tmp_path, A380)
    r = run("--backend", "intel", "--sysfs-root", str(root), "snapshot", "--json")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    doc = json.loads(r.stdout)
    assert doc["backend"] == "intel"
    (dev,) = doc["devices"]
    assert (dev["name"], dev["vendor"], dev["pci_bus_id"]) \
        == ("Intel GPU 8086:56A5", "intel", "0000:0b:00.0")
    assert (dev["temperature_c"], dev["power_limit_w"], dev["clock_sm_mhz"]) == (55.0, 55.0, 600)
    assert dev["energy_j"] == 25637161804 / 1e6
    # one reading: no power or utilization yet; no memory in sysfs: null, never 0
    assert dev["power_draw_w"] is None and dev["utilization_gpu_pct"] is None
    assert dev["memory_used_mib"] is None and dev["memory_total_mib"] is None
    assert dev["processes"] == []


def test_snapshot_text_of_an_integrated_gpu(tmp_path):
    root = mount(tmp_path, COMETLAKE)
    r = run("--backend", "intel", "--sysfs-root", str(root), "snapshot", "--color", "never")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("[0]")]
    assert "Intel GPU 8086:9B41" in line


def test_a_root_without_an_intel_card_is_one_line(tmp_path):
    root = mount(tmp_path, None)
    r = run("--backend", "intel", "--sysfs-root", str(root), "snapshot", "--json")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines() == [
        f"gputop: i915/xe: no card under {root}/sys/class/drm is driven by i915 or xe"]
