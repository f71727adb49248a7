"""The link rates of GPUs without GPM, on the real nvidia-ml-py binding over the C fake of
libnvidia-ml (tests/support/cfake.py; its GPUs have no GPM): PCIe from nvmlDeviceGetPcieThroughput,
NVLink from the per-link data counters between two samples, N/A where the driver has neither."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import cfake
from tests.support.paths import ROOT

pytestmark = pytest.mark.skipif(cfake.available() is not None, reason="needs gcc")

# vary=0: the fake's rates hold still and its NVLink counters grow linearly, so the figures are
# exact. GPU 0: 4 links at 1 GiB/s each way; GPU 1: no NVLink and no PCIe counter.
CONFIG = ("vary=0\ngpu.*.pcie_tx=204800\ngpu.*.pcie_tx_amp=0\ngpu.*.pcie_rx=409600\n"
          "gpu.*.pcie_rx_amp=0\ngpu.0.nvlink_count=4\ngpu.0.nvlink_rate=1048576\n"
          "gpu.1.nvlink_count=0\ngpu.1.pcie_tx=na\ngpu.1.pcie_rx=na\n")

SCRIPT = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from gputop.backends.base import BackendOptions
from gputop.backends.nvml.backend import NvmlBackend
from gputop.tui.text.wants import WIDE_CARDS

backend = NvmlBackend(BackendOptions())
backend.open()
out = []
for _ in range(2):
    snap = backend.sample(wants=WIDE_CARDS)
    out.append([[d.saturation.source, d.saturation.pcie_tx_mibps, d.saturation.pcie_rx_mibps,
                 d.saturation.nvlink_tx_mibps, d.saturation.nvlink_rx_mibps]
                for d in snap.devices])
    time.sleep(0.2)
backend.close()
print(json.dumps(out))
"""


@pytest.fixture
def node(tmp_path):
    folder = cfake.build(tmp_path / "lib")
    with cfake.Node(folder, gpus=2, procs_per_gpu=0, extra=CONFIG) as n:
        yield n


def test_the_wide_cards_get_pcie_and_nvlink_rates_without_gpm(node):
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT)], env=node.env(),
                         capture_output=True, text=True, timeout=60, check=True)
    first, second = json.loads(run.stdout)
    # PCIe: 200 and 400 MiB/s from the first sample; NVLink: no rate from one reading
    assert first[0] == [None, 200.0, 400.0, None, None]
    source, tx, rx, nvl_tx, nvl_rx = second[0]
    assert (source, tx, rx) == (None, 200.0, 400.0)
    assert nvl_tx == pytest.approx(4 * 1024.0, rel=0.01)  # 4 links x 1 GiB/s, in MiB/s
    assert nvl_rx == pytest.approx(4 * 1024.0, rel=0.01)
    assert first[1] == second[1] == [None, None, None, None, None]  # neither source: N/A
