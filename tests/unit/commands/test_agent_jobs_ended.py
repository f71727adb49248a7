"""The agent's end-of-job line (#30): the sample a job's last process left carries its record."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.support.paths import ROOT, gputop_cmd

# A compute-apps log written here (gputop's replay reads nvidia-smi's format): pid 7 leaves
# after the second sample, pid 8 stays (the log goes on past the samples read: a replay ends
# at its log's end, and the agent would wait there for one more)
LOG = """timestamp, gpu_uuid, pid, process_name, used_gpu_memory [MiB]
2026/11/26 10:00:00.000, GPU-a, 7, python a.py, 2048 MiB
2026/11/26 10:00:00.000, GPU-a, 8, python b.py, 2048 MiB
2026/11/26 10:00:00.100, GPU-a, 7, python a.py, 2048 MiB
2026/11/26 10:00:00.100, GPU-a, 8, python b.py, 2048 MiB
2026/11/26 10:00:00.200, GPU-a, 8, python b.py, 2048 MiB
2026/11/26 10:00:00.300, GPU-a, 8, python b.py, 2048 MiB
"""


def test_the_line_of_the_sample_a_job_left_carries_its_record(tmp_path):
    log = tmp_path / "apps.csv"
    log.write_text(LOG)
    out = subprocess.run(gputop_cmd("--backend", "replay", "--replay", str(log), "--interval",
                                    "0.1", "agent", "--ignore-stdin", "--count", "3"),
                         cwd=ROOT, capture_output=True, text=True, timeout=30, check=True)
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    ended = [d["jobs_ended"] for d in lines if "devices" in d][:3]
    assert ended[:2] == [[], []]
    (rec,) = ended[2]
    assert rec["job"] == "python a.py" and rec["inferred"] is True and rec["gpus"] == ["GPU-a"]
    assert rec["gpu_s"] == 0.1
    assert rec["last_seen"] - rec["first_seen"] == pytest.approx(0.1)
    assert rec["energy_j"] is None  # the log has no energy or power: not 0
