"""The issue's own `gputop advise --sweep` command, run as a process: its estimates stay within
the tolerance of the simulator's ground truth and every limit reads back as it was."""

from __future__ import annotations

import json

from tests.support.advise import TOLERANCE_PP


def test_done_when_command(adv):
    """The issue's command (at a higher sim speed to keep the suite fast, default windows)."""
    proc = adv.run("--sweep", "--max-slowdown", "5", "--json", "--sim-speed", "200", timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    sweep_doc = doc["sweep"]
    assert sweep_doc["settle_s"] == 10 and sweep_doc["measure_s"] == 20
    assert sweep_doc["recommendation"]["limit_w"] < 700
    assert sweep_doc["recommendation"]["slowdown_pct"] <= 5
    for row in sweep_doc["rows"]:
        assert abs(row["error_pp"]) <= TOLERANCE_PP, row
    assert len(doc["passive"]) == 8
    assert adv.limits() == [700.0] * 8
    assert adv.journals() == []
