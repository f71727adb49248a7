"""Idle-allocated accounting on the C fake of libnvidia-ml (#30): real processes hold GPU memory;
Slurm job 4242's (started by a process named as Slurm's step daemon, so gputop attributes it)
sits on a GPU that does nothing, another on a busy GPU, a third on a GPU that the fake's sine
wave takes from busy to idle and back every 2 s (utilization clamped at 0 half the time). The
time each was held idle shows live in the dashboard's IDLE column, in `snapshot --json --window`
with its user and job, in the agent's stream and in the exporter's counters.

The fake reads its config once and has no GPM: a process cannot be told to stop computing at a
given moment, so the schedule is the fake's own wave, and activity is utilization.gpu."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys

import pytest

from tests.support import cfake
from tests.support.kernel_lab import slurm_step
from tests.support.paths import ROOT, gputop_cmd
from tests.support.prom_harness import get, start_exporter, stop, wait_for
from tests.support.tmux import Pane

JOB = "4242"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """GPU 0: job 4242's process, 0 % busy; GPU 1: a process on a 90 % busy GPU; GPU 2: a
    process on a GPU that alternates busy and idle. Yields (environment, pids by GPU)."""
    why = cfake.available()
    if why is not None:
        pytest.skip(why)
    folder = cfake.build(tmp_path_factory.mktemp("fakenvml"))
    busy, wave = subprocess.Popen(["sleep", "600"]), subprocess.Popen(["sleep", "600"])
    try:
        with slurm_step(JOB) as job_pid:
            config = folder / "node.conf"
            config.write_text("gpu_count = 3\nperiod_s = 2\n"
                              "gpu.0.util_gpu = 0\ngpu.0.util_gpu_amp = 0\n"
                              "gpu.1.util_gpu = 90\ngpu.1.util_gpu_amp = 0\n"
                              "gpu.2.util_gpu = 0\ngpu.2.util_gpu_amp = 100\n"
                              f"gpu.0.procs = {job_pid}:8G\ngpu.1.procs = {busy.pid}:8G\n"
                              f"gpu.2.procs = {wave.pid}:8G\n")
            env = dict(os.environ, LD_LIBRARY_PATH=str(folder), FAKENVML_CONFIG=str(config))
            yield env, {0: job_pid, 1: busy.pid, 2: wave.pid}
    finally:
        for proc in (busy, wave):
            proc.kill()
            proc.wait(10)


def test_snapshot_window_counts_idle_time_per_process_job_and_user(node):
    env, pids = node
    out = subprocess.run(gputop_cmd("--backend", "nvml", "snapshot", "--json", "--window", "2",
                                    "--interval", "0.1"),
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    doc = json.loads(out.stdout)
    idle = {p["pid"]: p["idle_s"] for d in doc["devices"] for p in d["processes"]}
    assert 1.8 <= idle[pids[0]] <= 2.1  # held idle the whole window
    assert idle[pids[1]] == 0.0
    assert 0.3 <= idle[pids[2]] <= 1.7  # idle about half of each 2 s wave
    jobs = {j["job"]: j for j in doc["idle"]["jobs"]}
    me = getpass.getuser()
    assert jobs[f"job {JOB}"]["user"] == me and jobs[f"job {JOB}"]["inferred"] is False
    assert jobs[f"job {JOB}"]["idle_s"] == pytest.approx(idle[pids[0]], abs=1e-3)
    assert jobs[f"job {JOB}"]["idle_energy_j"] > 0  # the fake's energy counter moves
    assert {u["user"] for u in doc["idle"]["users"]} == {me}
    # the job's accounting: the one GPU held the whole window, all of it idle
    acct = {j["job"]: j for j in doc["job_accounting"]}[f"job {JOB}"]
    assert acct["gpus"] == [doc["devices"][0]["uuid"]] and acct["hpc_job"] == JOB
    assert acct["idle_gpu_s"] == pytest.approx(idle[pids[0]], abs=1e-3)
    assert acct["gpu_s"] == acct["idle_gpu_s"] and acct["sm_active_pct"] == 0.0
    assert acct["energy_j"] == pytest.approx(acct["idle_energy_j"]) and acct["energy_j"] > 0


def test_the_agent_stream_carries_each_processs_idle_time(node):
    env, pids = node
    out = subprocess.run(gputop_cmd("--backend", "nvml", "agent", "--ignore-stdin", "--count", "6",
                                    "--interval", "0.1"),
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    last = [d for d in lines if "devices" in d][-1]
    idle = {p["pid"]: p for d in last["devices"] for p in d["processes"]}
    assert 0.4 <= idle[pids[0]]["idle_s"] <= 0.6  # five intervals of 0.1 s
    assert idle[pids[0]]["idle_energy_j"] > 0 and idle[pids[1]]["idle_s"] == 0.0


def test_the_exporter_counts_the_jobs_idle_seconds(node):
    env, _ = node
    exporter = start_exporter("--backend", "nvml", "--interval", "0.1", env=env)
    try:
        def counted():
            status, body = get(f"http://{exporter.target}/metrics")
            lines = [line for line in body.decode().splitlines()
                     if line.startswith("gputop_idle_seconds_total{")
                     and f'hpc_job="{JOB}"' in line and f'user="{getpass.getuser()}"' in line]
            return lines and float(lines[0].rsplit(" ", 1)[1]) >= 0.5 and lines
        wait_for(counted, 10.0, "job 4242's idle seconds")
    finally:
        stop(exporter.proc)


def test_the_dashboard_shows_the_idle_time_live(node, tmp_path):
    env, pids = node
    env = {k: v for k, v in env.items() if k in ("LD_LIBRARY_PATH", "FAKENVML_CONFIG")}
    # COLUMNS and LINES as the pane's: Textual takes them over the terminal's size, and a test
    # runner may export its own (80), where IDLE gives way to the command
    env.update(TERM="xterm-256color", XDG_CONFIG_HOME=str(tmp_path / "cfg"), COLUMNS="120",
               LINES="40")
    pane = Pane(tmp_path, f"{sys.executable} -m gputop --backend nvml --interval 0.2", env,
                size=(120, 40))
    try:
        pane.wait_for("IDLE", 20)

        def idle_cells() -> dict[int, str]:
            lines = pane.screen().splitlines()
            header = next(line for line in lines if "IDLE" in line and "COMMAND" in line)
            end = header.index("IDLE") + len("IDLE")  # right-aligned under its title
            return {pid: line[end - 6:end].strip() for line in lines for pid in pids.values()
                    if f" {pid} " in line}

        wait_for(lambda: idle_cells().get(pids[0], "-") not in ("-", "0:00"), 10,
                 "job 4242's idle time")
        cells = idle_cells()
        assert cells[pids[1]] == "-"  # on the busy GPU
        row = next(line for line in pane.screen().splitlines() if f" {pids[0]} " in line)
        assert JOB in row and getpass.getuser() in row
    finally:
        pane.close()
