"""A node with NVIDIA and AMD GPUs, as processes: the C fake of libnvidia-ml gives NVML (so this
runs on a machine without one; LD_LIBRARY_PATH puts the fake before any real library) and a
captured amdgpu tree under ``--sysfs-root`` the AMD card. ``--sysfs-root`` moves only where the
sysfs backends read; NVML is found by loading the library, as always. `auto` shows both sets
of GPUs, numbered on, each with its vendor (#32 item 4), and every script-facing face reads it."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.support import cfake
from tests.support.amd import mount
from tests.support.paths import ROOT, gputop_cmd

RX6900XT = "sysfs_RX6900XT-Navi21-RDNA2_amdgpu_lact-snapshot_gpu_metrics"

pytestmark = pytest.mark.skipif(cfake.available() is not None, reason="needs gcc")


@pytest.fixture
def mixed(tmp_path):
    """(the environment, the --sysfs-root) of a node with 2 fake H100s and a captured RX 6900 XT;
    PATH names an empty folder, so that no npu-smi or amd-smi of this machine is run."""
    folder = cfake.build(tmp_path / "lib")
    empty = tmp_path / "bin"
    empty.mkdir()
    root = mount(tmp_path / "root", RX6900XT)
    with cfake.Node(folder, gpus=2, procs_per_gpu=1) as node:
        yield node.env(PATH=str(empty)), str(root)


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(gputop_cmd(*args), env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def test_snapshot_json_shows_both_vendors(mixed):
    env, root = mixed
    r = run(env, "--sysfs-root", root, "snapshot", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["backend"] == "nvml+amd"
    assert [(d["index"], d["vendor"]) for d in doc["devices"]] == [
        (0, "nvidia"), (1, "nvidia"), (2, "amd")]
    assert [d["name"] for d in doc["devices"]] == [
        "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "AMD GPU 1002:73BF"]
    amd = doc["devices"][2]
    assert (amd["pci_bus_id"], amd["utilization_gpu_pct"], amd["power_draw_w"]) \
        == ("0000:0c:00.0", 3, 36.0)
    assert doc["driver_version"] == "580.159.04"  # NVIDIA's: the fake driver's


def test_one_vendor_chosen_is_that_vendor_alone(mixed):
    env, root = mixed
    r = run(env, "--backend", "amd", "--sysfs-root", root, "snapshot", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["backend"] == "amd" and [d["index"] for d in doc["devices"]] == [0]


def test_text_snapshot_query_mode_and_nvidia_smi_read_the_mixed_node(mixed):
    env, root = mixed
    text = run(env, "--sysfs-root", root, "snapshot", "--color", "never")
    assert text.returncode == 0, text.stderr
    assert "backend: nvml+amd" in text.stdout
    assert [ln[:3] for ln in text.stdout.splitlines() if ln.startswith("[")] == [
        "[0]", "[1]", "[2]"]
    query = run(env, "--sysfs-root", root, "--query-gpu=index,name,power.draw",
                "--format=csv,noheader")
    assert query.returncode == 0, query.stderr
    rows = query.stdout.splitlines()
    # query mode and the nvidia-smi faces see the node as nvidia-smi does: its NVIDIA GPUs, with
    # their own indices (a script's log of a workstation gets no iGPU row)
    assert [r.split(", ")[:2] for r in rows] == [
        ["0", "NVIDIA H100 80GB HBM3"], ["1", "NVIDIA H100 80GB HBM3"]]
    listing = run(env, "--sysfs-root", root, "nvidia-smi", "-L")
    assert listing.returncode == 0, listing.stderr
    assert [ln.split(":")[0] for ln in listing.stdout.splitlines()] == ["GPU 0", "GPU 1"]
    table = run(env, "--sysfs-root", root, "nvidia-smi")
    assert table.returncode == 0, table.stderr
    assert "AMD GPU" not in table.stdout and "H100" in table.stdout
    # asked for by name, the AMD card answers query mode itself
    amd = run(env, "--backend", "amd", "--sysfs-root", root, "--query-gpu=index,name,power.draw",
              "--format=csv,noheader")
    assert amd.returncode == 0 and amd.stdout.strip() == "0, AMD GPU 1002:73BF, 36.00 W", amd
