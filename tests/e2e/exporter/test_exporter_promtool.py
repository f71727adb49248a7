"""promtool, run on what the exporter emits, finds only the names dcgm-exporter chose."""

from __future__ import annotations

import subprocess

from gputop.exporter import collect, exposition, own
from gputop.formats import dcgm
from tests.support.demo import sim_snapshot
from tests.support.prom_harness import find


def test_promtool_finds_only_the_names_dcgm_exporter_chose():
    """The exposition parses; the only lint is about names kept for dashboards' sake."""
    body = exposition.render(collect.families(sim_snapshot("crowded"), own.Options(), "t"))
    out = subprocess.run([find("promtool"), "check", "metrics"], input=body,
                         capture_output=True, timeout=30)
    problems = (out.stdout + out.stderr).decode().strip().splitlines()
    assert out.returncode in (0, 3), problems  # 3: lint problems only, no parse error
    allowed = ("label names should be written in 'snake_case' not 'camelCase'",
               'counter metrics should have "_total" suffix',
               "metric name should not include type 'counter'")
    for line in problems:
        name, _, problem = line.partition(" ")
        assert problem in allowed, line
        if problem != allowed[0]:
            assert name in dcgm.BY_NAME, line
