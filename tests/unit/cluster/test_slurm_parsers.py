"""Slurm's parsers take any text without raising (pure functions; no Slurm tool runs)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gputop.cluster import slurm


@example("²")  # a digit to str.isdigit, not to int()
@example("  Nodes=gpu01 CPU_IDs=0 GRES=gpu:a100:1(IDX:٣)\n")
@settings(max_examples=300, deadline=None)
@given(st.text())
def test_slurm_parsers_take_any_text_without_raising(text):
    slurm.parse_job_gres(text)
    slurm.parse_node_gpus(text)
    assert slurm.parse_idx(text) is None or all(0 <= i < 1024 for i in slurm.parse_idx(text))
