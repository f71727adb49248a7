"""A stand-in for a user's benchmark: sleeps as long as the simulated training job would take at
the power limit in the simulator's state file (argv: STATE_FILE BASE_SECONDS [EXIT_CODE]).

It loads only the simulator's physics module (by path, no package import) and is meant to run
under `python -S`, so that interpreter start-up adds little noise to the wall time.
"""

import importlib.util
import json
import os
import sys
import time

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "sim_physics", os.path.join(HERE, "..", "..", "gputop", "backends", "sim", "physics.py"))
physics = importlib.util.module_from_spec(spec)
spec.loader.exec_module(physics)

# The `training` scenario's job (gputop/scenarios/training.toml) on an H100 SXM.
with open(os.path.join(HERE, "..", "..", "gputop", "data", "scenarios", "training.toml"), "rb") as fh:
    JOB = tomllib.load(fh)["job"][0]
IDLE_W, TDP_W = 70.0, 700.0  # the h100-sxm part (gputop/backends/sim/scenario.py)
INTENSITY, MEMORY_BOUND = JOB["intensity"], JOB["memory_bound"]


def speed_at(limit_w):
    clock = physics.capped_clock(limit_w, IDLE_W, TDP_W - IDLE_W, INTENSITY)
    return physics.relative_speed(clock, MEMORY_BOUND)


if __name__ == "__main__":
    state, base = sys.argv[1], float(sys.argv[2])
    limit = TDP_W
    if os.path.exists(state):
        with open(state, encoding="utf-8") as fh:
            limit = min(json.load(fh)["power_limits"].values())
    time.sleep(base / speed_at(limit))
    print(f"fake job done at {limit:g} W")
    sys.exit(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
