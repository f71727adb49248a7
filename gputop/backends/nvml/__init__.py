"""NVIDIA GPUs through NVML (nvidia-ml-py); pynvml itself is imported when the backend opens."""
