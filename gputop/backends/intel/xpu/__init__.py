"""Intel data-center GPUs (Max, Flex) read by running xpu-smi: `discovery --dump`, `dump`, `ps`."""
