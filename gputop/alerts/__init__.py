"""Alerts: rules a person writes, one engine that fires and resolves them on the sampler's
snapshots, a journal that survives restarts, and the channels that carry them to people.

Layer: above `gputop.analysis` (rules name its hint codes), below the consumers (dashboard,
``watch``, agent, cluster view, exporter), which each run the same engine.
"""
