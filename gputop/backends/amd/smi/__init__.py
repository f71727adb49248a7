"""AMD GPUs read through the `amd-smi` tool's JSON, where it is installed."""
