"""NVIDIA GPUs through NVML (nvidia-ml-py). pynvml itself is imported when the backend opens."""

from gputop.backends.nvml.backend import NvmlBackend

__all__ = ["NvmlBackend"]
