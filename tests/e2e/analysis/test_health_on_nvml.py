"""Health problems a GPU reports reach the person: on the C fake of libnvidia-ml (the real
nvidia-ml-py path), a GPU with uncorrectable ECC errors and one whose PCIe link trained narrow
each get a hint with its reason in `gputop snapshot`, and a badge on their card (#27)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import cfake
from tests.support.paths import ROOT, gputop_cmd
from tests.support.tmux import Pane

HEALTH = "gpu.1.ecc_errors=12\ngpu.2.pcie_width=4\ngpu.2.pcie_width_max=16\n"

pytestmark = pytest.mark.skipif(cfake.available() is not None, reason="needs gcc")


@pytest.fixture
def node(tmp_path):
    folder = cfake.build(tmp_path / "lib")
    with cfake.Node(folder, gpus=4, procs_per_gpu=1, extra=HEALTH) as n:
        yield n


def test_snapshot_names_each_health_problem(node):
    out = subprocess.run(gputop_cmd("--backend", "nvml", "snapshot"), env=node.env(), cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert "GPU 1 has 12 uncorrectable ECC errors since the driver loaded" in out
    assert "GPU 2's PCIe link runs x4 of its x16" in out
    assert "GPU 0 has" not in out and "GPU 3's PCIe" not in out


def test_the_dashboard_shows_a_badge_for_each(node, tmp_path):
    env = {k: v for k, v in node.env().items() if k in ("LD_LIBRARY_PATH", "FAKENVML_CONFIG")}
    env.update(TERM="xterm-256color", XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    pane = Pane(tmp_path, f"{sys.executable} -m gputop --backend nvml", env, size=(160, 48))
    try:
        pane.wait_for("[ecc-uncorrected]", 30)
        pane.wait_for("[pcie-degraded]", 10)
    finally:
        pane.close()
