"""AMD GPUs read through ROCm's older `rocm-smi --json`, where it is the tool installed."""
