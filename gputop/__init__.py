"""gputop: a terminal dashboard for multi-GPU nodes."""

__version__ = "0.1.0"
