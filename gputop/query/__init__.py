"""nvidia-smi compatible query mode (`gputop --query-gpu=… --format=csv`), CSV logs and recording.

Nothing here imports Textual: `gputop --query-gpu` must start fast, also on a remote node.
"""
