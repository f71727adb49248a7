"""Dense peak throughput per part (gputop/data/peaks.toml) and matching a device name to it.

The table stores only figures that were checked against a datasheet (see the file's header);
a missing figure is ``None`` and every estimate built on it is ``None`` too.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, fields
from functools import lru_cache

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from gputop.core import datafiles

FIGURES = (
    "fp64_tflops",
    "fp64_tensor_tflops",
    "fp32_tflops",
    "tf32_tflops",
    "fp16_tflops",
    "bf16_tflops",
    "fp16_sparse_tflops",
    "fp8_tflops",
    "int8_tops",
    "memory_bw_gbps",
)


@dataclass(frozen=True)
class PeakSpec:
    key: str
    name: str
    patterns: tuple[str, ...]
    source: str
    vendor: str = "nvidia"
    tensor_cores: bool = False
    fp64_tflops: float | None = None
    fp64_tensor_tflops: float | None = None
    fp32_tflops: float | None = None
    tf32_tflops: float | None = None
    fp16_tflops: float | None = None  # dense tensor rate, FP32 accumulate
    bf16_tflops: float | None = None
    fp16_sparse_tflops: float | None = None  # the datasheet's "with sparsity" figure, for checks
    fp8_tflops: float | None = None
    int8_tops: float | None = None
    memory_bw_gbps: float | None = None
    checked: str | None = None
    note: str | None = None

    @property
    def tensor_tflops(self) -> float | None:
        """The dense 16-bit tensor peak that an 'any tensor active' share is measured against."""
        return self.fp16_tflops if self.tensor_cores else None


_FIELDS = {f.name for f in fields(PeakSpec)}


def parse_table(data: dict) -> tuple[PeakSpec, ...]:
    out = []
    for raw in data.get("part", []):
        unknown = set(raw) - _FIELDS
        if unknown:
            raise ValueError(f"peaks table: part {raw.get('key')!r} has unknown keys {unknown}")
        kwargs = dict(raw)
        kwargs["patterns"] = tuple(raw["patterns"])
        for name in FIGURES:
            if name in kwargs:
                kwargs[name] = float(kwargs[name])
        out.append(PeakSpec(**kwargs))
    return tuple(out)


@lru_cache(maxsize=1)
def table() -> tuple[PeakSpec, ...]:
    text = datafiles.read_text("peaks.toml")
    return parse_table(tomllib.loads(text))


@lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[PeakSpec, tuple[re.Pattern[str], ...]], ...]:
    return tuple((p, tuple(re.compile(x, re.IGNORECASE) for x in p.patterns)) for p in table())


def normalize_name(name: str) -> str:
    """'NVIDIA A100-SXM4-80GB' and 'Tesla_V100  PCIe' → lower case, single spaces."""
    return " ".join(name.replace("_", " ").lower().split())


@lru_cache(maxsize=256)
def match_part(name: str | None) -> PeakSpec | None:
    """The peak-spec entry for a device name as NVML or npu-smi reports it, or None."""
    if not name:
        return None
    text = normalize_name(name)
    for spec, patterns in _compiled():
        if any(p.search(text) for p in patterns):
            return spec
    return None
