"""`gputop advise` on MIG GPUs, run as a process: the report says once that the limit is the
physical GPU's, restores the parent's limit, and the JSON names each GPU's instance profiles."""

from __future__ import annotations

import json


def test_the_cli_report_says_so_once_and_restores_the_parents_limit(adv):
    proc = adv.run("--sweep", "-i", "2", "--sim-speed", "1000", "--settle", "2", "--measure",
                   "5", "--no-plot", scenario="mig", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stdout.splitlines() if line.startswith("MIG:")] == [
        "MIG: GPU 2 (3g.40gb, 2x 2g.20gb). Power limits are per physical GPU: the advisor sets"
        " the whole GPU's limit and measures the slowdown of all its instances' jobs together."]
    assert adv.limits(scenario="mig") == [700.0] * 8 and adv.journals() == []
    doc = json.loads(adv.run("--window", "2", "--sim-speed", "100", "--json", "-i", "2,4",
                             scenario="mig").stdout)
    assert [g["mig_profiles"] for g in doc["passive"]] == [["3g.40gb", "2g.20gb", "2g.20gb"], []]


