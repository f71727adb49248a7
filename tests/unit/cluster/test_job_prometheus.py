"""`gputop cluster --prometheus URL --slurm JOBID`: the job's GPUs are those whose series carry
its `hpc_job` label; only the nodes holding them are read whole, each with only those GPUs."""

from __future__ import annotations

import re

from gputop.cluster.job_view import report
from gputop.cluster.prometheus import PrometheusCluster

# instance -> GPU -> (hpc_job, power W); all at 97% utilization
GPUS = {"a:9400": {0: ("4242", 690.0), 1: ("4242", 688.0), 2: (None, 120.0)},
        "b:9400": {0: ("77", 690.0), 1: ("4242", 410.0)},
        "c:9400": {0: (None, 90.0)}}


class ScriptedProm:
    """Answers as a Prometheus scraping three dcgm-exporters would, honouring the `hpc_job`
    and `instance=~` matchers of each query."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, url: str, promql: str, timeout: float) -> list[dict]:
        self.asked.append(promql)
        job = re.search(r'hpc_job="([^"]*)"', promql)
        wanted = re.search(r'instance=~"([^"]*)"', promql)
        insts = [i for i in GPUS if wanted is None
                 or re.fullmatch(wanted.group(1).replace("\\\\", "\\"), i)]
        if promql.startswith(("up", "timestamp(")):
            value = 100.0 if promql.startswith("timestamp(") else 1.0
            return [{"labels": {"instance": i}, "value": value} for i in insts]
        metric = re.search(r"DCGM_FI_DEV_(GPU_UTIL|POWER_USAGE|FB_USED)\{", promql)
        if metric is None:
            return []
        out = []
        for inst in insts:
            for gpu, (holder, power) in GPUS[inst].items():
                if job is not None and holder != job.group(1):
                    continue
                value = {"GPU_UTIL": 97.0, "POWER_USAGE": power, "FB_USED": 40000.0}[
                    metric.group(1)]
                out.append({"labels": {"instance": inst, "gpu": str(gpu),
                                       "Hostname": inst.split(":")[0]}, "value": value})
        return out


def test_the_job_is_read_from_its_hpc_job_series_alone():
    query = ScriptedProm()
    cluster = PrometheusCluster("http://x", '{job="gpus"}', query=query, wall=lambda: 100.0,
                                once=True, job="4242")
    assert cluster.refresh()
    assert query.asked[0] == \
        'max by (instance, gpu) (DCGM_FI_DEV_FB_USED{job="gpus", hpc_job="4242"})'
    whole = query.asked[1:]
    assert whole and all('{job="gpus", instance=~"a:9400|b:9400"}' in q
                         for q in whole if "{" in q), whole
    shown = {s.host: [d.index for d in s.snapshot.devices] for s in cluster.statuses()}
    assert shown == {"a": [0, 1], "b": [1]}  # c holds none of it; b's GPU 0 is job 77's
    r = report("4242", {s.host: s.snapshot for s in cluster.statuses()})
    assert [(s.node, s.index) for s in r.stragglers] == [("b", 1)]
    assert "power 410 W while its peers draw 689 W" in r.stragglers[0].reason


def test_a_job_no_series_carries_is_said_so():
    cluster = PrometheusCluster("http://x", query=ScriptedProm(), wall=lambda: 100.0,
                                once=True, job="999")
    assert cluster.refresh() and cluster.statuses() == []
    assert cluster.problem == ('Prometheus at http://x has no GPU series with hpc_job="999" '
                               "(job ended, or not labelled)")
