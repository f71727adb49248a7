"""Power-limit advisor figures: the issue's command per scenario, its rows against the truth.

    python bench/advisor_sweep.py [--sim-speed 20] [--scenario training ...]

Runs `gputop advise --backend sim --sim-state F --sweep --max-slowdown 5 --json --sim-speed N`
(default settle/measure windows) in a subprocess with a fresh state file and XDG state dir, then
reads the limits back with `gputop snapshot --json`. Prints each row's estimated and true
slowdown, the largest error, the real time against its floor (the sweep's simulated seconds
divided by the speed: what the windows alone take), and whether the limits read back as before.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def gputop(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gputop", *args], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=900)


def limits(scenario: str, state: str, env: dict[str, str]) -> list[float]:
    out = gputop("snapshot", "--json", "--backend", "sim", "--scenario", scenario,
                 "--sim-state", state, env=env)
    return [d["power_limit_w"] for d in json.loads(out.stdout)["devices"]]


def one(scenario: str, speed: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_STATE_HOME=os.path.join(tmp, "xdg"), PYTHONPATH=str(ROOT))
        env.pop("GPUTOP_SIM_STATE", None)
        state = os.path.join(tmp, "state.json")
        before = limits(scenario, state, env)
        t0 = time.monotonic()
        proc = gputop("advise", "--backend", "sim", "--scenario", scenario, "--sim-state", state,
                      "--sweep", "--max-slowdown", "5", "--json", "--sim-speed", f"{speed:g}",
                      env=env)
        real = time.monotonic() - t0
        if proc.returncode != 0:
            print(f"{scenario}: advise failed ({proc.returncode}): {proc.stderr.strip()}")
            return
        doc = json.loads(proc.stdout)["sweep"]
        after = limits(scenario, state, env)
        rows = doc["rows"]
        windows = 2 * (len(rows) - 1) + 1
        simulated = windows * (doc["settle_s"] + doc["measure_s"]) - doc["settle_s"]
        floor = simulated / speed
        print(f"\n{scenario}: {doc['job_class']}, proxy {doc['proxy']}, step {doc['step_w']:g} W,"
              f" stopped: {doc['stopped']}")
        print(f"  {'limit':>6} {'saved':>7} {'estimate':>9} {'spread':>7} {'truth':>7} {'error':>7}"
              f" {'energy/work':>11}")
        for r in rows:
            print(f"  {r['limit_w']:>5.0f}W {r['saved_w']:>6.0f}W {r['slowdown_pct']:>8.2f}%"
                  f" {r['spread_pct'] or 0:>6.2f}  {r['true_slowdown_pct']:>6.2f}%"
                  f" {r['error_pp']:>+6.2f}  {r['energy_change_pct']:>+9.1f}%")
        worst = max(abs(r["error_pp"]) for r in rows)
        rec = doc["recommendation"]
        print(f"  recommendation {rec['limit_w']:g} W (measured {rec['slowdown_pct']:.2f}%),"
              f" cost optimum (eta 0.5) {rec['cost_optimum_w']:g} W")
        print(f"  largest |error| {worst:.2f} pp over {len(rows)} rows")
        print(f"  real time {real:.1f} s for {simulated:.0f} simulated s at speed {speed:g};"
              f" floor {floor:.1f} s, ratio {real / floor:.2f}")
        print(f"  limits before {sorted(set(before))}, after {sorted(set(after))}:"
              f" {'restored' if before == after else 'CHANGED'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim-speed", type=float, default=20.0)
    ap.add_argument("--scenario", action="append",
                    help="scenario (repeatable; default: training, memory-bound, power-capped)")
    args = ap.parse_args()
    for scenario in args.scenario or ["training", "memory-bound", "power-capped"]:
        one(scenario, args.sim_speed)


if __name__ == "__main__":
    main()
