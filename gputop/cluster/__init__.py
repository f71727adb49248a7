"""The cluster view's core: hosts, the ssh transport, the agent protocol and node states.

Nothing here imports Textual: `gputop cluster --once --json` and the benchmark run without it.
The Textual screens live in `gputop/tui/cluster.py` and read this package's pure views.
"""
