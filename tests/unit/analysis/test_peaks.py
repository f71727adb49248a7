"""The peak-spec table: name matching from NVML/npu-smi names, and the table's sanity."""

from __future__ import annotations

import re

import pytest

from gputop.analysis import peaks
from gputop.analysis.peaks import FIGURES, match_part, parse_table, table


@pytest.mark.parametrize("name,key", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H100 NVL", "h100-nvl"),
    ("NVIDIA H800", "h800"),
    ("NVIDIA H20", "h20"),
    ("NVIDIA H200", "h200"),
    ("NVIDIA H200 NVL", "h200-nvl"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"),
    ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
    ("NVIDIA A800-SXM4-80GB", "a800-80gb"),
    ("NVIDIA A800-SXM4-40GB", "a800-40gb"),
    ("NVIDIA A10", "a10"),
    ("NVIDIA A10G", "a10g"),
    ("NVIDIA A30", "a30"),
    ("NVIDIA A40", "a40"),
    ("NVIDIA L4", "l4"),
    ("NVIDIA L40", "l40"),
    ("NVIDIA L40S", "l40s"),
    ("Tesla T4", "t4"),
    ("Tesla V100-SXM2-32GB", "v100-sxm2"),
    ("Tesla V100-SXM2-16GB", "v100-sxm2"),
    ("Tesla V100-PCIE-32GB", "v100-pcie"),
    ("Tesla V100S-PCIE-32GB", "v100s"),
    ("Tesla V100-SXM3-32GB", "v100-sxm3"),
    ("Tesla P100-PCIE-16GB", "p100-pcie"),
    ("Tesla P100-SXM2-16GB", "p100-sxm2"),
    ("Tesla P40", "p40"),
    ("NVIDIA GeForce RTX 3090", "rtx-3090"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA B200", "b200"),
    ("Ascend910B3", "ascend-910b"),
    ("Ascend 910B1", "ascend-910b"),
])
def test_name_matching(name, key):
    spec = match_part(name)
    assert spec is not None and spec.key == key


@pytest.mark.parametrize("name", [
    None, "", "NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 4090 D", "NVIDIA GB200",
    "NVIDIA RTX A4000", "NVIDIA GeForce GTX 1080", "Ascend310P3",
])
def test_unknown_or_different_parts_do_not_borrow_a_neighbours_figures(name):
    assert match_part(name) is None


def test_every_entry_has_a_source_and_says_what_was_checked():
    for spec in table():
        assert spec.source.strip(), spec.key
        # a figure is stored only with a record of how it was checked; otherwise a note says why not
        has_figures = any(getattr(spec, f) is not None for f in FIGURES)
        assert (spec.checked if has_figures else (spec.checked or spec.note)), spec.key


def test_dense_figures_are_never_the_sparse_ones():
    for spec in table():
        if spec.fp16_sparse_tflops is not None:
            assert spec.fp16_tflops is not None, spec.key
            assert spec.fp16_tflops < spec.fp16_sparse_tflops, spec.key
            assert spec.fp16_tflops == pytest.approx(spec.fp16_sparse_tflops / 2, rel=0.02), spec.key


def test_figures_are_plausible_and_ordered():
    for spec in table():
        for f in FIGURES:
            v = getattr(spec, f)
            assert v is None or v > 0, (spec.key, f)
        if spec.tensor_cores and spec.fp16_tflops and spec.fp32_tflops:
            assert spec.fp16_tflops > spec.fp32_tflops, spec.key  # tensor beats vector FP32
        if spec.tf32_tflops and spec.fp16_tflops:
            assert spec.tf32_tflops <= spec.fp16_tflops, spec.key
        if spec.fp8_tflops and spec.fp16_tflops:
            assert spec.fp8_tflops >= spec.fp16_tflops, spec.key
        if spec.memory_bw_gbps:
            assert 100 <= spec.memory_bw_gbps <= 10000, spec.key


def test_known_figures():
    # spot checks against the datasheets named in the table
    assert match_part("NVIDIA H100 80GB HBM3").fp16_tflops == pytest.approx(989.4)
    assert match_part("NVIDIA H100 80GB HBM3").memory_bw_gbps == 3350
    assert match_part("NVIDIA A100-SXM4-80GB").memory_bw_gbps == 2039
    assert match_part("NVIDIA A100-SXM4-40GB").memory_bw_gbps == 1555
    assert match_part("NVIDIA H20").fp16_tflops == 148  # 296 is its FP8/INT8 figure
    assert match_part("NVIDIA GeForce RTX 4090").fp16_tflops == pytest.approx(165.2)
    assert match_part("Tesla V100-SXM2-32GB").bf16_tflops is None  # Volta has no BF16
    assert match_part("Ascend910B3").fp16_tflops is None  # unverified: not stored


def test_patterns_compile_and_keys_are_unique():
    keys = [s.key for s in table()]
    assert len(keys) == len(set(keys))
    for spec in table():
        for p in spec.patterns:
            re.compile(p)


def test_unknown_keys_in_the_table_are_an_error():
    with pytest.raises(ValueError, match="unknown keys"):
        parse_table({"part": [{"key": "x", "name": "X", "patterns": ["x"], "source": "s",
                               "fp16_tflops_sparse_typo": 1.0}]})


def test_name_normalisation():
    assert peaks.normalize_name("  Tesla_V100   PCIe ") == "tesla v100 pcie"
