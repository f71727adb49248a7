"""`gputop snapshot --json --backend sim` as a process: the scenarios' devices and processes, one
document for one seed and speed, and a power limit read back by a new process."""

import json
import subprocess

import pytest

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from tests.support.paths import gputop_cmd


def run_json(*args: str) -> dict:
    out = subprocess.run(gputop_cmd("snapshot", "--json", "--backend", "sim", *args),
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return json.loads(out)


def test_snapshot_json_has_8_devices_with_processes_and_dense16_has_16():
    doc = run_json()
    assert doc["schema"] == "gputop/1" and doc["backend"] == "sim"
    assert len(doc["devices"]) == 8
    assert all(d["processes"] and d["sim"]["work_rate"] == pytest.approx(1.0, abs=0.01)
               for d in doc["devices"])
    assert len(run_json("--scenario", "dense-16")["devices"]) == 16


def test_same_seed_and_speed_give_the_same_document():
    args = ("--seed", "7", "--sim-speed", "50", "--window", "5", "--scenario", "mixed")
    a, b = run_json(*args), run_json(*args)
    a.pop("time"), b.pop("time")  # wall time of the run, the one thing that differs
    for doc in (a, b):
        for dev in doc["devices"]:
            for p in dev["processes"]:
                p.pop("started")  # relative to the run's wall time too
        for job in doc["job_accounting"]:
            for key in ("first_seen", "last_seen", "started"):  # the run's wall time too
                job.pop(key)
    assert a == b
    c = run_json("--seed", "8", "--sim-speed", "50", "--window", "5", "--scenario", "mixed")
    assert c["devices"][0]["uuid"] != a["devices"][0]["uuid"]


def test_a_power_limit_set_through_the_backend_is_read_back_by_a_new_process(tmp_path):
    state = tmp_path / "sim-state.json"
    backend = SimBackend(BackendOptions(sim_state=str(state)))
    backend.open()
    backend.set_power_limit(2, 450)
    doc = run_json("--sim-state", str(state))
    assert [d["power_limit_w"] for d in doc["devices"]] == [700, 700, 450, 700, 700, 700, 700, 700]
    # ... and by a running backend in this process, without reopening (as on a real driver).
    other = SimBackend(BackendOptions(sim_state=str(state)))
    other.open()
    backend.set_power_limit(3, 500)
    assert other.sample().devices[3].power_limit_w == 500


