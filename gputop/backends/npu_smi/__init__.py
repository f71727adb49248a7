"""Huawei Ascend backend: runs `npu-smi` and parses its text (see parse.py for the layouts)."""

from gputop.backends.npu_smi.backend import NpuSmiBackend
from gputop.backends.npu_smi.parse import NpuSmiParseError
from gputop.backends.npu_smi.runner import NpuSmiError, NpuSmiExitError, NpuSmiTimeout

__all__ = ["NpuSmiBackend", "NpuSmiParseError", "NpuSmiError", "NpuSmiExitError", "NpuSmiTimeout"]
