"""`gputop advise` end to end on the simulator: passive, dry run, no permission, benchmark."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gputop.backends.sim import physics
from gputop.backends.sim.scenario import load
from tests.support.paths import ROOT, SUPPORT

FAKE_JOB = SUPPORT / "fake_job.py"


def test_passive_view_json(adv):
    proc = adv.run("--window", "300", "--sim-speed", "100", "--json", scenario="memory-bound")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["mode"] == "passive" and doc["sweep"] is None
    gpus = doc["passive"]
    assert [g["index"] for g in gpus] == list(range(8))
    for g in gpus:
        assert 380 < g["draw_p50_w"] <= g["draw_p95_w"] <= g["draw_max_w"] < 450
        assert g["power_limit_w"] == 700 and g["power_limit_min_w"] == 200
        assert g["capped_share"] == 0
        assert g["energy_j"] == pytest.approx(g["draw_mean_w"] * g["window_s"], rel=0.03)
        # p95 sits far under the limit and nothing was capped: a lower limit costs nothing.
        assert g["draw_p95_w"] * 1.1 <= g["no_cost_limit_w"] < 700
    assert not adv.state.exists()  # nothing was written


def test_passive_view_text_training_and_power_capped(adv):
    proc = adv.run("--window", "300", "--sim-speed", "100", "-i", "0,3")
    assert proc.returncode == 0, proc.stderr
    assert "GPU 0,3" in proc.stdout and "SIMULATED" in proc.stdout
    assert "draw near the limit" in proc.stdout
    # #27: the default 30 s window is too short to suggest a limit, and says so
    short = adv.run("--window", "30", "--sim-speed", "100", scenario="memory-bound")
    assert "too short to suggest a limit" in short.stdout and "nvidia-smi -i" not in short.stdout
    capped = adv.run("--window", "5", "--sim-speed", "100", "--json", scenario="power-capped")
    for g in json.loads(capped.stdout)["passive"]:
        assert g["capped_share"] > 0.8 and g["no_cost_limit_w"] is None
        assert "power cap" in g["note"]


def test_dry_run_changes_nothing(adv):
    proc = adv.run("--sweep", "--dry-run", "--step", "50")
    assert proc.returncode == 0, proc.stderr
    assert "Dry run: nothing was changed." in proc.stdout
    assert "650, 600, 550" in proc.stdout and "sudo nvidia-smi -i 0,1,2,3,4,5,6,7 -pl 650" in proc.stdout
    as_json = adv.run("--sweep", "--dry-run", "--json", "--lowest", "500")
    plan = json.loads(as_json.stdout)["plan"]
    assert plan["step_w"] == 35  # 5% of 700 W beats 25 W
    assert plan["candidates_w"] == [665, 630, 595, 560, 525, 500]
    assert not adv.state.exists() and adv.journals() == []
    assert adv.limits() == [700.0] * 8


def test_no_permission_falls_back_to_passive_and_changes_nothing(adv):
    env = dict(adv.env, GPUTOP_SIM_NO_PERMISSION="1")
    proc = adv.run("--sweep", "--json", "--sim-speed", "200", "--measure", "5", "-i", "1,2",
                   env=env)
    assert proc.returncode == 0, proc.stderr
    assert "root or CAP_SYS_ADMIN" in proc.stderr
    assert "sudo nvidia-smi -i 1,2 -pl 665" in proc.stderr
    assert "sudo nvidia-smi -i 1,2 -pl 700" in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["mode"] == "passive" and doc["sweep"] is None
    assert "CAP_SYS_ADMIN" in doc["skipped"]["reason"]
    assert [g["index"] for g in doc["passive"]] == [1, 2]
    assert adv.journals() == []
    assert adv.limits() == [700.0] * 8


def test_sweep_on_a_device_without_power_limits_falls_back_to_passive(adv):
    proc = adv.run("--sweep", "--json", "--sim-speed", "200", "--window", "4",
                   scenario="ascend-910b")
    assert proc.returncode == 0, proc.stderr
    assert "cannot sweep" in proc.stderr and "no power limit" in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["mode"] == "passive" and doc["sweep"] is None and doc["passive"]
    assert adv.journals() == [] and not adv.state.exists()


def test_gpu_lost_mid_sweep_restores_the_others_and_keeps_the_journal(adv):
    proc = adv.run("--sweep", "--sim-speed", "500", "--no-plot", scenario="gpu-lost")
    assert proc.returncode == 1
    err = proc.stderr
    assert "GPU 3 became lost" in err and "GPU 3 is lost" in err and "Traceback" not in err
    assert "could not restore" in err and "--restore" in err
    # The others are back; GPU 3 cannot be confirmed, so the journal stays for --restore.
    assert adv.limits(scenario="gpu-lost") == [700.0] * 8
    assert len(adv.journals()) == 1


def test_restore_with_nothing_to_do(adv):
    proc = adv.run("--restore")
    assert proc.returncode == 0 and "nothing to restore" in proc.stdout


@pytest.mark.parametrize("args,message", [
    (("--eta", "1.5"), "argument --eta: expected a number from 0 to 1, not '1.5'"),
    (("--restore", "--sweep"), "--restore cannot be combined"),
    (("--sweep", "--repeat", "0", "--run", "true"),
     "argument --repeat: expected a whole number from 1 to 1000, not '0'"),
    (("--run", "'unbalanced"), "cannot split the command"),
    (("--sweep", "-i", "9"), "no device matches id '9'"),
    (("--max-slowdown", "100"), "argument --max-slowdown: expected a number from 0.01 to 99 %"),
])
def test_bad_input_is_one_clear_line(adv, args, message):
    proc = adv.run(*args)
    assert proc.returncode != 0
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert adv.journals() == [] and not adv.state.exists()


def true_slowdown(limit: float) -> float:
    sc = load("training")
    job, part = sc.jobs[0], sc.part
    assert (part.idle_w, part.tdp_w) == (70, 700)  # what fake_job.py assumes
    f = physics.capped_clock(limit, part.idle_w, part.tdp_w - part.idle_w, job.intensity)
    return 100.0 * (1.0 - physics.relative_speed(f, job.memory_bound))


def fake_job(adv, base: float, *extra: str) -> str:
    return f"{sys.executable} -S {FAKE_JOB} {adv.state} {base} {' '.join(extra)}"


def test_benchmark_mode_times_the_command_at_each_limit(adv):
    base_s = 0.5
    proc = adv.run("--run", fake_job(adv, base_s), "--json", "--sim-speed", "100", "--settle", "1",
                   "--interval", "5", "--step", "200", "--max-slowdown", "10", "-i", "0")
    assert proc.returncode == 0, proc.stderr
    assert "fake job done at 700 W" in proc.stderr  # its output goes to stderr, not the JSON
    doc = json.loads(proc.stdout)
    sweep = doc["sweep"]
    assert doc["mode"] == "benchmark" and sweep["proxy"] == "wall time"
    rows = sweep["rows"]
    base = rows[0]["time_s"]
    assert [r["limit_w"] for r in rows] == [700, 500, 300, 200][:len(rows)] and len(rows) >= 2
    for row in rows:
        # The command really ran at that limit: it cannot finish sooner than the simulated job.
        floor = base_s / (1 - true_slowdown(row["limit_w"]) / 100)
        assert floor <= row["time_s"] < floor + 1.0, rows
        # Slowdown is the wall-time ratio (as throughput lost); energy is from the counter.
        assert row["slowdown_pct"] == pytest.approx(100 * (1 - base / row["time_s"]), abs=0.05)
        assert row["energy_j"] > 0 and row["power_w"] > 0
    # Wall time on a busy machine is noisy, so which limit first passes 10% may vary (the stop
    # rule sees the first baseline; the rows use both); the recommendation is the last limit
    # before the first one over 10% in the rows shown.
    assert sweep["stopped"] == "max-slowdown" or rows[-1]["limit_w"] == 200
    first_over = next((i for i, r in enumerate(rows) if r["slowdown_pct"] > 10), len(rows))
    assert sweep["recommendation"]["limit_w"] == rows[first_over - 1]["limit_w"]
    assert adv.limits() == [700.0] * 8 and adv.journals() == []


def test_benchmark_command_failure_restores_and_says_so(adv):
    proc = adv.run("--run", fake_job(adv, 0.05, "3"), "--sim-speed", "100", "--settle", "1")
    assert proc.returncode == 1
    assert "exited with status 3" in proc.stderr
    missing = adv.run("--run", "/nonexistent/benchmark --x", "--sim-speed", "100")
    assert missing.returncode == 1 and "cannot run the benchmark command" in missing.stderr
    assert adv.limits() == [700.0] * 8 and adv.journals() == []


def test_advise_never_imports_textual(adv):
    code = ("import sys; from gputop.commands.main import main; "
            "rc = main(['advise', '--backend', 'sim', '--window', '2', '--sim-speed', '100',"
            " '--json']); "
            "import gputop.advisor.render, gputop.advisor.benchmark, gputop.advisor.sweep; "
            "assert 'textual' not in sys.modules, 'textual imported'; sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env=adv.env, timeout=60)
    assert proc.returncode == 0, proc.stderr
