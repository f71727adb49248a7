"""The report's counter query (`gputop.report.prometheus.counted`) through the real promtool's
PromQL engine, on series shaped as the exporter serves them: each counter's rise over the
range is read at its edges where that is exact, and from `increase()` where it is not (a reset,
a start Prometheus did not see)."""

from __future__ import annotations

import json
import subprocess

from gputop.exporter import own
from gputop.report.prometheus import queries
from tests.support.prom_harness import find

NODE = {"instance": "n1:9400", "job": "gpus", "hostname": "n1"}
START, END = 150.0, 570.0  # seconds after promtool's epoch; samples every 60 s from 0


def labels(workload: str) -> dict[str, str]:
    """An account's labels (an empty one is no label to PromQL: the sums have none)."""
    return {**NODE, "user": "alice", "hpc_job": "", "workload": workload, "inferred": "true"}


def series(name: str, workload: str) -> str:
    return name + "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in labels(workload).items()) \
        + "}"


# workload: (the counter's samples at 0, 60, … 600 s; its account's first-seen time, from when
# the exporter serves it; what the query answers, and why)
CASES = {
    # at start the sample of 120 s (20), last in range that of 540 s (40): 20, where increase()
    # would extrapolate the 30 → 40 of 180-540 s to the range's 420 s (11.67)
    "steady": ("0 10 20 30 40 40 40 40 40 40 40", "0x10", 20.0),
    # absent at start, first seen after it: it counted from 0, all of its last value
    "new": ("_ _ _ _ 5 15 25 25 25 25 25", "_ _ _ _ 200x6", 25.0),
    # absent at start but first seen before it (Prometheus missed its start): increase():
    # 5 → 25 over 240-540 s, extrapolated 30 s (half an interval) before and 30 s after
    "unseen": ("_ _ _ _ 5 15 25 25 25 25 25", "_ _ _ _ 100x6", 24.0),
    # reset at 300 s (40 → 25), never below the start's 20: increase(), which adds the 40 it
    # had: (56 - 30 + 40) over 180-540 s, extrapolated 30 s each side, * 420 / 360
    "reset": ("0 10 20 30 40 25 35 45 56 56 56", "0x10", 77.0),
    # reset between the start's sample (20, at 120 s) and the range's first (2, at 180 s),
    # which resets() over the range does not see: increase(), 2 → 38 over 180-540 s,
    # extrapolated to where it was 0 (20 s before) and 30 s after
    "down": ("0 10 20 2 8 14 20 26 32 38 38", "0x10", 38 - 2 + (20 + 30) * 36 / 360),
}


def test_each_counter_is_read_at_its_edges_where_exact_else_by_increase(tmp_path):
    inputs = []
    for workload, (values, first_seen, _) in CASES.items():
        inputs.append({"series": series(own.JOB_GPU_SECONDS, workload), "values": values})
        inputs.append({"series": series(own.JOB_FIRST_SEEN, workload), "values": first_seen})
    promql = queries(START, END)["gpu_s"]
    spec = tmp_path / "tests.yml"
    spec.write_text(json.dumps({  # YAML is a superset of JSON
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": inputs, "promql_expr_test": [{
            "expr": promql, "eval_time": f"{END:g}s",
            "exp_samples": [{"labels": "{" + ",".join(
                f"{k}={json.dumps(v)}" for k, v in labels(w).items()
                if v and k not in ("instance", "job")) + "}", "value": want}
                for w, (_, _, want) in CASES.items()]}]}]}))
    out = subprocess.run([find("promtool"), "test", "rules", str(spec)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
