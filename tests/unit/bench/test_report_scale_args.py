"""The scale bench's runs (bench/report_scale.py --runs NODESxSTEP): a run it cannot read is
one line from argparse, not a traceback."""

from __future__ import annotations

import argparse

import pytest

from bench.report_scale import nodes_by_step


def test_a_run_is_nodes_by_seconds_between_scrapes():
    assert nodes_by_step("1000x600") == (1000, 600)
    assert nodes_by_step("25x15") == (25, 15)


@pytest.mark.parametrize("text", ["1", "1000", "x600", "1000x", "10x0", "0x600", "ax5",
                                  "1000x600x2", "-5x10", "1000X600"])
def test_anything_else_is_refused_with_what_a_run_looks_like(text):
    with pytest.raises(argparse.ArgumentTypeError, match="NODESxSTEP"):
        nodes_by_step(text)
