"""The node label's name: dcgm-exporter called it "Hostname" until its release 4.5.3-4.8.2 and
"hostname" since (its commit d5e5f51, PR #655). Dashboards and alerts of either age exist, so
both can be served at once. Light on purpose: the command line reads it for its choices."""

from __future__ import annotations

HOSTNAME_LABELS = {"hostname": ("hostname",), "Hostname": ("Hostname",),
                   "both": ("Hostname", "hostname")}
DEFAULT_HOSTNAME_LABEL = "hostname"  # what current dcgm-exporter emits
