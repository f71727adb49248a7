"""`gputop report` over a real agent's recording of the simulator's `idle-rank` scenario: its
per-job figures against the simulator's ground truth, worked out from the scenario's own
definition (which GPUs job 4242 holds, which rank is idle, since the recording began) and the
raw energy counters of the recorded lines, not from gputop's ledger."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gputop.backends.sim.scenario import load
from tests.support.paths import ROOT

GPUTOP = [sys.executable, "-m", "gputop"]
# 150 samples 2 simulated seconds apart at 200x: five simulated minutes in about 1.5 s
AGENT = ["agent", "--backend", "sim", "--scenario", "idle-rank", "--interval", "2",
         "--sim-speed", "200", "--count", "150", "--ignore-stdin"]


def test_the_report_of_an_agent_recording_matches_the_simulators_truth(tmp_path):
    recording = tmp_path / "node.ndjson"
    with open(recording, "wb") as out:
        subprocess.run([*GPUTOP, *AGENT], stdout=out, stdin=subprocess.DEVNULL, cwd=ROOT,
                       timeout=30, check=True)
    done = subprocess.run([*GPUTOP, "report", str(recording), "--format", "json",
                           "--price", "0.5"], capture_output=True, text=True, cwd=ROOT,
                          timeout=30, check=True)
    (job,) = json.loads(done.stdout)["jobs"]

    # the scenario's definition: job 4242's GPUs, those a rank holds idle, and its memory
    mine = [j for j in load("idle-rank").jobs if j.slurm_job == "4242"]
    gpus = {g for j in mine for g in j.gpus}
    idle = {g for j in mine if j.idle for g in j.gpus}
    memory = sum(j.memory_mib * len(j.gpus) for j in mine)
    # the recording's raw lines: how long it ran, and each GPU's energy counter over it
    lines = [json.loads(line) for line in recording.read_bytes().splitlines()[1:] if line.strip()]
    span_h = (lines[-1]["time"] - lines[0]["time"]) / 3600
    joules = {d["index"]: d["energy_j"] - first["energy_j"]
              for first, d in zip(lines[0]["devices"], lines[-1]["devices"])}

    assert (job["job"], job["user"], job["nodes"], job["gpus"]) == \
        ("job 4242", "alice", 1, len(gpus))
    assert job["gpu_h"] == pytest.approx(len(gpus) * span_h, abs=1e-4)
    assert job["idle_gpu_h"] == pytest.approx(len(idle) * span_h, abs=1e-4)
    assert job["idle_pct"] == pytest.approx(100 * len(idle) / len(gpus), abs=0.01)
    assert job["kwh"] == pytest.approx(sum(joules[g] for g in gpus) / 3.6e6, abs=1e-4)
    assert job["idle_kwh"] == pytest.approx(sum(joules[g] for g in idle) / 3.6e6, abs=1e-4)
    assert job["cost"] == pytest.approx(job["kwh"] * 0.5, abs=1e-4)
    assert job["peak_mem_mib"] == memory
