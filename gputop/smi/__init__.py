"""nvidia-smi's other faces on any backend: the table, `-L`, `-q` and `-q -x` (`gputop nvidia-smi`)."""
