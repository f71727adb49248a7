"""The power-limit advisor: what a lower power limit would cost the running job.

``passive`` and ``curve``/``recommend`` are pure functions over snapshots and rows; ``sweep`` and
``benchmark`` drive a backend (the only code in gputop that changes a device), always inside a
``journal.LimitGuard`` that puts the original limits back. Nothing here imports Textual.
"""
