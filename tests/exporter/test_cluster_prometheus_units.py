"""The Prometheus transport without a server: answers checked, troubles kept to one line with
backoff, node states from up and sample age, and the cluster screen showing the line."""

from __future__ import annotations

import json

import pytest

from gputop.cluster import states
from gputop.cluster.prometheus import (
    PrometheusCluster,
    PrometheusError,
    build_nodes,
    check_selector,
    parse_vector,
)
from gputop.errors import UsageError


def vector(*series: tuple[dict, str]) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": labels, "value": [1.0, value]} for labels, value in series]}}).encode()


@pytest.mark.parametrize("body, needle", [
    (b"<html>", "not JSON"),
    (json.dumps({"status": "error", "error": "parse error"}).encode(), "refused"),
    (json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode(),
     "no instant vector"),
    (json.dumps({"status": "success", "data": {"resultType": "vector",
                                               "result": [{"metric": {}, "value": [1]}]}}).encode(),
     "malformed value"),
    (json.dumps({"status": "success", "data": {"resultType": "vector",
                                               "result": ["x"]}}).encode(), "malformed series"),
])
def test_an_unexpected_answer_is_one_error(body: bytes, needle: str):
    with pytest.raises(PrometheusError, match=needle):
        parse_vector(body, "up")


def test_non_finite_values_are_dropped():
    got = parse_vector(vector(({"instance": "a"}, "NaN"), ({"instance": "b"}, "1")), "up")
    assert got == [{"labels": {"instance": "b"}, "value": 1.0}]


@pytest.mark.parametrize("text", ['job="gpus"', '{job=gpus}', '{job="a"} or up', "{"])
def test_a_bad_selector_is_a_usage_error(text: str):
    with pytest.raises(UsageError, match="--selector"):
        check_selector(text)


def test_good_selectors_pass():
    assert check_selector('{job="gpus", cluster=~"a|b"}') == '{job="gpus", cluster=~"a|b"}'
    assert check_selector(None) == ""


def answers(up: dict[str, float], scraped: dict[str, float], **metrics) -> dict:
    out = {"up": [{"labels": {"instance": i}, "value": v} for i, v in up.items()],
           "timestamp(up)": [{"labels": {"instance": i}, "value": t} for i, t in scraped.items()]}
    out.update(metrics)
    return out


def test_states_from_up_and_sample_age():
    util = [{"labels": {"instance": i, "gpu": "0", "Hostname": f"host-{i}"}, "value": 50.0}
            for i in ("a", "b")]
    nodes = build_nodes(answers({"a": 1, "b": 1, "c": 0}, {"a": 995, "b": 800, "c": 999},
                                DCGM_FI_DEV_GPU_UTIL=util), now=1000.0, stale_after=90.0)
    got = {key: (host, state) for key, host, state, *_ in nodes}
    assert got == {"a": ("host-a", states.OK), "b": ("host-b", states.STALE),
                   "c": ("c", states.DOWN)}
    snap = nodes[0][4]
    assert snap.devices[0].utilization_gpu_pct == 50.0
    assert snap.backend == "dcgm"  # no gputop_info: a plain dcgm-exporter
    assert snap.devices[0].temperature_c is None  # absent stays absent


def test_dcgm_memory_total_is_used_free_and_reserved():
    labels = {"instance": "a", "gpu": "0"}
    nodes = build_nodes(answers({"a": 1}, {"a": 1000},
                                DCGM_FI_DEV_FB_USED=[{"labels": labels, "value": 100.0}],
                                DCGM_FI_DEV_FB_FREE=[{"labels": labels, "value": 900.0}],
                                DCGM_FI_DEV_FB_RESERVED=[{"labels": labels, "value": 24.0}]),
                        now=1000.0, stale_after=90.0)
    assert nodes[0][4].devices[0].memory_total_mib == 1024.0


class Scripted:
    def __init__(self) -> None:
        self.fail: str | None = None
        self.calls = 0

    def __call__(self, url: str, promql: str, timeout: float) -> list[dict]:
        self.calls += 1
        if self.fail:
            raise PrometheusError(self.fail)
        if promql.startswith("timestamp("):
            return [{"labels": {"instance": "a"}, "value": 100.0}]
        if promql.startswith("up"):
            return [{"labels": {"instance": "a"}, "value": 1.0}]
        if "DCGM_FI_DEV_GPU_UTIL" in promql:
            return [{"labels": {"instance": "a", "gpu": "0", "Hostname": "node-a"},
                     "value": 7.0}]
        return []


def test_a_failing_prometheus_keeps_the_last_nodes_and_backs_off():
    query = Scripted()
    cluster = PrometheusCluster("http://x", query=query, interval=5.0, wall=lambda: 100.0)
    assert cluster.refresh() and cluster.problem is None
    assert [s.host for s in cluster.statuses()] == ["node-a"]
    query.fail = "Prometheus unreachable at http://x: Connection refused"
    waits = []
    for _ in range(8):
        assert not cluster.refresh()
        waits.append(cluster.backoff())
    assert cluster.problem == "Prometheus unreachable at http://x: Connection refused"
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    assert [s.host for s in cluster.statuses()] == ["node-a"]  # the last answer stays shown
    query.fail = None
    assert cluster.refresh() and cluster.problem is None and cluster.backoff() == 5.0


async def test_the_cluster_screen_shows_the_problem_as_one_line():
    pytest.importorskip("gputop.tui.cluster")
    from gputop.tui.cluster import ClusterApp

    query = Scripted()
    cluster = PrometheusCluster("http://x", query=query, interval=0.05, wall=lambda: 100.0)
    app = ClusterApp(cluster, interval=0.05, refresh_s=0.05)
    async with app.run_test(size=(160, 30)) as pilot:
        for _ in range(40):
            await pilot.pause(0.05)
            if app.nodes_table.row_count == 1:
                break
        assert app.nodes_table.row_count == 1
        query.fail = "Prometheus answered HTTP 503 to up"
        for _ in range(60):
            await pilot.pause(0.05)
            if "HTTP 503" in app._summary:
                break
        assert "⚠ Prometheus answered HTTP 503 to up" in app._summary
        assert app.nodes_table.row_count == 1
