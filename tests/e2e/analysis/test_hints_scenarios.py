"""`gputop snapshot --window` in a process of its own gives the straggler's history hint with
its advice, and never imports Textual."""

from __future__ import annotations

SNAPSHOT_SCRIPT = """
import runpy, sys
sys.argv = ["gputop", "snapshot", "--json", "--backend", "sim", "--scenario", "straggler",
            "--window", "60", "--sim-speed", "60"]
try:
    runpy.run_module("gputop", run_name="__main__")
except SystemExit:
    pass
assert "textual" not in sys.modules, "gputop snapshot imported textual"
"""


def test_snapshot_cli_window_gives_history_hints_without_textual():
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", SNAPSHOT_SCRIPT], capture_output=True, text=True,
                         timeout=60, check=True)
    doc = json.loads(out.stdout)
    assert [(h["device"], h["code"]) for h in doc["hints"] if h["code"] == "straggler"] == \
        [(5, "straggler")]
    assert all(h["advice"] for h in doc["hints"])
