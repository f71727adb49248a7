"""The agent stream carries each Xid as it comes, raw on its device and explained (#29)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_the_agent_stream_carries_each_xid_explained_once():
    proc = subprocess.run(
        [sys.executable, "-m", "gputop", "agent", "--backend", "sim", "--scenario", "xid-thermal",
         "--sim-speed", "1000", "--ignore-stdin", "--count", "24"],
        capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    docs = [json.loads(line) for line in proc.stdout.splitlines()[1:] if line.strip()]
    explained = [e for d in docs for e in d["xid_events"]]
    raw = [e for d in docs for dev in d["devices"] for e in dev["xid_events"]]
    assert [(e["device"], e["code"]) for e in raw] == [(1, 79)]
    assert [(e["device"], e["code"], e["name"], e["users"]) for e in explained] == [
        (1, 79, "GPU has fallen off the bus", ["alice"])]
