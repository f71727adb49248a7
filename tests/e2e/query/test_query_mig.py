"""`gputop --query-gpu` on the MIG scenario, as a process: N/A utilization on MIG GPUs only, as a
real MIG-enabled H100 prints."""

from __future__ import annotations

import subprocess

from gputop.formats.query_fields import NA
from tests.support.paths import gputop_cmd

MIG_GPU, WHOLE_GPU = 2, 4  # in the sim's mig scenario


def test_the_command_line_prints_na_utilization_on_mig_gpus_only():
    out = subprocess.run(
        gputop_cmd("--backend", "sim", "--scenario", "mig",
                   "--query-gpu=index,utilization.gpu,utilization.memory,mig.mode.current,"
                   "mig.mode.pending", "--format=csv,noheader"),
        capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert [line.split(", ")[1:3] == [NA, NA] for line in out] == [True] * 4 + [False] * 4
    assert [line.split(", ")[3:] for line in out] == \
        [["Enabled", "Enabled"]] * 4 + [["Disabled", "Disabled"]] * 4
