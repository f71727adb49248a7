"""A bad --sim-state file is the same one line, and exit 1, in every command that reads it
(`snapshot`, `advise`, query mode), each run as a process."""

from __future__ import annotations

import os
import subprocess

from tests.support.paths import ROOT, gputop_cmd

MIN_W, MAX_W = 200, 700  # the training scenario's H100: power_limit_min_w .. max_w


def test_the_reported_state_file_is_one_line_in_every_command(tmp_path):
    state = tmp_path / "state.json"
    state.write_text('{"power_limits": [1]}')
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUTOP_")}
    env["XDG_STATE_HOME"] = str(tmp_path / "xdg")
    for argv in (["snapshot", "--json"], ["advise", "--sweep", "--dry-run"],
                 ["--query-gpu=index,power.limit", "--format=csv"]):
        r = subprocess.run(gputop_cmd(*argv, "--backend", "sim", "--sim-state", str(state)),
                           capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
        assert r.returncode == 1 and r.stdout == "", (argv, r.stderr)
        assert r.stderr.splitlines() == [
            f"gputop: simulator state file {state}: \"power_limits\" must map GPU UUIDs to watts,"
            " found an array"], argv


# ---------------------------------------------------------------- the advisor's journal


