"""`gputop exporter`: the sampler's latest snapshot as Prometheus metrics.

dcgm-exporter's metric names and labels (``dcgm.py``), so that its Grafana dashboard and users'
PromQL work unchanged, plus gputop's own ``gputop_`` family (``own.py``) for what it lacks. A
consumer like the agent: it reads snapshots, never a device, and never imports Textual.
"""
