"""The Prometheus transport without a server: answers checked, troubles kept to one line with
backoff, node states from up and sample age, and the cluster screen showing the line."""

from __future__ import annotations

import json
import re

import pytest

from gputop.cluster import states
from gputop.cluster.prometheus import (
    SUMMARY_QUERIES,
    PrometheusCluster,
    PrometheusError,
    build_nodes,
    build_summaries,
    check_selector,
    parse_vector,
    with_instance,
)
from gputop.core.errors import UsageError


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
    """Answers like a Prometheus holding one dcgm-exporter target ``a`` (host node-a, one GPU
    at 7% utilization), whether asked per GPU or per node."""

    def __init__(self) -> None:
        self.fail: str | None = None
        self.calls = 0
        self.asked: list[str] = []

    def __call__(self, url: str, promql: str, timeout: float) -> list[dict]:
        self.calls += 1
        self.asked.append(promql)
        if self.fail:
            raise PrometheusError(self.fail)
        if promql.startswith("timestamp("):
            return [{"labels": {"instance": "a"}, "value": 100.0}]
        if promql.startswith("up"):
            return [{"labels": {"instance": "a"}, "value": 1.0}]
        if promql.startswith("count by (instance, Hostname"):
            return [{"labels": {"instance": "a", "Hostname": "node-a"}, "value": 1.0}]
        if promql.startswith("avg by (instance) (DCGM_FI_DEV_GPU_UTIL"):
            return [{"labels": {"instance": "a"}, "value": 7.0}]
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


async def settle(pilot, done, tries: int = 60) -> bool:
    """Let the app run until ``done()`` holds (or ``tries`` × 50 ms pass)."""
    for _ in range(tries):
        await pilot.pause(0.05)
        if done():
            return True
    return False


def scripted_app(interval: float):
    """The cluster screen on a Scripted Prometheus refreshing every ``interval`` seconds."""
    from gputop.tui.cluster import ClusterApp

    query = Scripted()
    cluster = PrometheusCluster("http://x", query=query, interval=interval, wall=lambda: 100.0)
    return query, ClusterApp(cluster, interval=interval, refresh_s=0.05)


async def test_the_cluster_screen_shows_the_problem_as_one_line():
    query, app = scripted_app(0.05)
    async with app.run_test(size=(160, 30)) as pilot:
        assert await settle(pilot, lambda: app.nodes_table.row_count == 1)
        query.fail = "Prometheus answered HTTP 503 to up"
        await settle(pilot, lambda: "HTTP 503" in app._summary)
        assert "⚠ Prometheus answered HTTP 503 to up" in app._summary
        assert app.nodes_table.row_count == 1


def summary_answers(**by_name: dict[str, float | tuple[dict, float]]) -> dict:
    """SUMMARY_QUERIES' answers from {query name: {instance: value or (labels, value)}}."""
    out: dict[str, list[dict]] = {name: [] for name, _ in SUMMARY_QUERIES}
    for name, values in by_name.items():
        for inst, v in values.items():
            labels, value = v if isinstance(v, tuple) else ({}, v)
            out[name].append({"labels": {"instance": inst, **labels}, "value": value})
    return out


def test_node_summaries_from_per_node_aggregates():
    gib = 1024.0 * 1024 * 1024
    answers = summary_answers(
        up={"g": 1, "d": 1, "e": 1, "x": 0}, **{"timestamp(up)": {"g": 990, "d": 995, "e": 999}},
        gpus={"g": ({"Hostname": "gpu-g", "hostname": "gpu-g"}, 8),
              "d": ({"Hostname": "gpu-d"}, 2)},
        util={"g": 50.0, "d": 25.0}, mem_used={"g": 8000.0, "d": 100.0},
        mem_free={"g": 1.0, "d": 900.0}, mem_reserved={"d": 24.0},
        mem_total={"g": 8 * 80 * gib}, power={"g": 4000.0}, power_limit={"g": 5600.0},
        hints={"g": 3}, snapshot_time={"g": 800.0},
        backend={"g": ({"backend": "nvml"}, 1)})
    got = {t.key: t for t in build_summaries(answers, now=1000.0, stale_after=90.0)}
    assert list(got) == ["d", "e", "g", "x"]
    g, d = got["g"], got["d"]
    assert (g.host, g.mode, g.state) == ("gpu-g", "exporter", states.STALE)  # its own snapshot
    assert g.age == 200.0
    assert (g.data.gpus, g.data.util_pct, g.data.mem_used_mib, g.data.mem_total_mib,
            g.data.power_w, g.data.power_limit_w, g.data.hints, g.data.time) == \
        (8, 50.0, 8000.0, 8 * 80 * 1024.0, 4000.0, 5600.0, 3, 800.0)
    assert (d.host, d.mode, d.state) == ("gpu-d", "dcgm", states.OK)
    assert d.data.mem_total_mib == 1024.0  # used + free + reserved, as per GPU
    assert (d.data.power_w, d.data.power_limit_w, d.data.hints) == (None, None, 0)
    assert (got["e"].host, got["e"].data, got["e"].mode) == ("e", None, "prometheus")  # no data
    assert got["x"].state == states.DOWN


def test_a_live_refresh_asks_per_node_aggregates_and_an_opened_node_whole():
    query = Scripted()
    cluster = PrometheusCluster("http://x", '{job="gpus"}', query=query, wall=lambda: 100.0)
    assert cluster.refresh()
    # one series per node: every query but up's is aggregated by instance
    assert len(query.asked) == len(SUMMARY_QUERIES)
    assert all(q.startswith(("up{", "timestamp(up{")) or " by (instance" in q
               for q in query.asked), query.asked
    [status] = cluster.statuses()
    assert status.host == "node-a" and status.snapshot is None
    assert status.summary.util_pct == 7.0 and status.summary.gpus == 1
    query.asked.clear()
    cluster.detail({"node-a"})
    assert cluster.refresh()
    whole = [q for q in query.asked if 'instance="a"' in q]
    assert whole and all('{job="gpus", instance="a"}' in q for q in whole)
    [status] = cluster.statuses()
    assert status.snapshot.devices[0].utilization_gpu_pct == 7.0
    query.asked.clear()
    cluster.detail(())  # closed again: summaries alone
    assert cluster.refresh() and len(query.asked) == len(SUMMARY_QUERIES)
    assert cluster.statuses()[0].snapshot is None


def test_once_and_the_users_view_fetch_every_node_whole():
    query = Scripted()
    cluster = PrometheusCluster("http://x", query=query, wall=lambda: 100.0, once=True)
    assert cluster.refresh()
    assert cluster.statuses()[0].snapshot.devices[0].utilization_gpu_pct == 7.0
    live = PrometheusCluster("http://x", query=query, wall=lambda: 100.0)
    live.detail(every=True)
    assert live.refresh() and live.statuses()[0].snapshot is not None


@pytest.mark.parametrize("selector, want", [
    ("", '{instance="10.0.0.1:9400"}'),
    ('{job="gpus"}', '{job="gpus", instance="10.0.0.1:9400"}'),
    ('{job="gpus",}', '{job="gpus", instance="10.0.0.1:9400"}'),
    ("{}", '{instance="10.0.0.1:9400"}'),
])
def test_an_opened_node_is_the_selector_plus_its_instance(selector, want):
    assert with_instance(selector, "10.0.0.1:9400") == want
    assert with_instance("", 'a"b\\c') == '{instance="a\\"b\\\\c"}'


def test_stopping_while_queries_are_out_ends_quietly(monkeypatch):
    import threading

    crashes = []
    monkeypatch.setattr(threading, "excepthook", crashes.append)
    release = threading.Event()
    started = threading.Event()

    def slow(url: str, promql: str, timeout: float) -> list[dict]:
        started.set()
        release.wait(5)
        return []

    cluster = PrometheusCluster("http://x", query=slow, interval=60.0)
    cluster.start()
    thread = cluster._thread
    assert started.wait(5)
    cluster.stop(timeout=0.1)  # queries still out: the rest are cancelled
    release.set()
    thread.join(5)
    assert not thread.is_alive() and crashes == []


async def test_opening_a_node_fetches_it_whole_into_the_dashboard():
    query, app = scripted_app(60.0)
    from gputop.tui.cluster import NodeScreen

    async with app.run_test(size=(160, 30)) as pilot:
        assert await settle(pilot, lambda: app.nodes_table.row_count == 1)
        assert not any('instance="a"' in q for q in query.asked)
        app.open_node("node-a")  # long before the next 60 s refresh
        assert await settle(pilot, lambda: isinstance(app.screen, NodeScreen) and
                            app.screen.seq >= 0)
        assert any('instance="a"' in q for q in query.asked)


async def test_a_refresh_right_after_opening_a_node_waits_for_its_screen():
    # the refresh timer may fire between push_screen and the node screen's mount: it must
    # leave the unbuilt screen to its own mount instead of querying widgets it has not got
    query, app = scripted_app(60.0)
    from gputop.tui.cluster import NodeScreen

    async with app.run_test(size=(160, 30)) as pilot:
        assert await settle(pilot, lambda: app.nodes_table.row_count == 1)
        app.open_node("node-a")
        app.refresh_view(force=True)  # before the pushed screen has mounted
        assert await settle(pilot, lambda: isinstance(app.screen, NodeScreen) and
                            app.screen.seq >= 0)


async def test_a_refresh_while_quitting_with_a_node_open_ends_quietly():
    # Quitting tears the node screen's widgets down while the refresh timer still ticks: the
    # tick must find nothing to draw, not raise NoMatches into the quit.
    query, app = scripted_app(60.0)
    from gputop.tui.cluster import NodeScreen

    async with app.run_test(size=(160, 30)) as pilot:
        assert await settle(pilot, lambda: app.nodes_table.row_count == 1)
        app.open_node("node-a")
        assert await settle(pilot, lambda: isinstance(app.screen, NodeScreen) and
                            app.screen.seq >= 0)
        await app.screen.query_one("#node-status").remove()
        app.refresh_view(force=True)


async def test_a_refresh_after_the_last_screen_is_gone_does_nothing():
    # the refresh timer's last tick can come after quitting popped every screen: it raised
    # ScreenStackError into the quit (seen once in twenty runs of the test above)
    query, app = scripted_app(60.0)
    async with app.run_test(size=(160, 30)) as pilot:
        assert await settle(pilot, lambda: app.nodes_table.row_count == 1)
    assert not app.screen_stack
    refreshes = app.refreshes
    app.refresh_view(force=True)
    assert app.refreshes == refreshes


def test_a_query_submitted_as_the_pool_stops_is_run_or_cancelled_never_stranded():
    """A refresh hands its queries to the pool while the view quits: each query either runs or is
    cancelled, and whoever waits on it is told. A query cancelled without telling its waiter, or
    queued behind the workers' stop signals, kept its refresh waiting until its deadline (the
    cluster thread outlived stop)."""
    import threading
    from concurrent.futures import wait

    from gputop.cluster.prometheus import _DaemonPool

    def submit_many(pool: _DaemonPool, futures: list) -> None:
        for _ in range(40):
            try:
                futures.append(pool.submit(lambda: None))
            except RuntimeError:  # stopped: the caller is told
                return

    for _ in range(300):
        pool = _DaemonPool(2, "t")
        futures: list = []
        submitter = threading.Thread(target=submit_many, args=(pool, futures))
        submitter.start()
        pool.shutdown(wait=True, cancel_futures=True)
        submitter.join()
        assert not wait(futures, 2.0).not_done, "a query was left neither run nor cancelled"


def _exposed(snap) -> dict[tuple[str, str, str], float]:
    """The exporter's samples for ``snap`` under the names Prometheus stores (prometheus_client's
    parser renames a counter's samples): (name, gpu, sensor or clock label) -> value."""
    from gputop.exporter import collect, exposition, own

    text = exposition.render(collect.families(snap, own.Options(), "t")).decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            name, _, labels = series.partition("{")
            got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels))
            out[(name, got.get("gpu", ""), got.get("sensor") or got.get("clock", ""))] = \
                float(value)
    return out


def test_each_own_family_is_the_exporters_figure_in_the_dcgm_unit(tmp_path):
    """OWN, checked against what the exporter serves: an NVIDIA GPU's own family, converted,
    equals its DCGM series; an AMD GPU's (no DCGM series) equals its model figure in DCGM's
    unit."""
    from gputop.backends.amd.backend import AmdBackend
    from gputop.backends.base import BackendOptions
    from gputop.cluster.prometheus import OWN, VIEWED
    from gputop.core.model import Device, Snapshot
    from tests.support.amd import mount

    nvidia = Device(index=0, uuid="GPU-x", name="T", vendor="nvidia", utilization_gpu_pct=37,
                    memory_used_mib=1234.5, power_draw_w=250.5, energy_j=12.25,
                    temperature_c=61, temperature_memory_c=70, clock_sm_mhz=1410,
                    clock_mem_mhz=1593)
    amd = AmdBackend(BackendOptions(sysfs_root=str(mount(
        tmp_path, "sysfs_RX6900XT-Navi21-RDNA2_amdgpu_lact-snapshot_gpu_metrics"))))
    amd.open()
    try:
        amd_snap = amd.sample()
    finally:
        amd.close()
    checked = 0
    for snap in (Snapshot(host="n", time=1.0, backend="nvml", devices=(nvidia,)), amd_snap):
        dev = snap.devices[0]
        samples = _exposed(snap)
        for name, own in OWN.items():
            metric = VIEWED[name]
            label = own.match.partition('="')[2].rstrip('"')
            got = samples.get((own.family, "0", label))
            want = getattr(dev, metric.attr)
            if want is None:
                assert got is None, name  # N/A in the model, no sample to fall back on
                continue
            times, per = own.in_dcgm_unit(name)
            assert got is not None, name
            assert got * times / per == pytest.approx(want * metric.scale, rel=1e-12), name
            if dev.vendor == "nvidia":
                assert samples[(name, "0", "")] == pytest.approx(got * times / per), name
            else:
                assert (name, "0", "") not in samples
            checked += 1
    assert checked == 2 * len(OWN) - 1  # the capture has no energy counter


def test_a_gpu_takes_its_vendor_from_the_exporters_status():
    amd = {"instance": "a", "gpu": "0", "device": "", "vendor": "amd"}
    util = [{"labels": {"instance": "a", "gpu": "0"}, "value": 3.0}]
    status = [{"labels": {**amd, "status": "ok"}, "value": 1.0}]
    nodes = build_nodes(answers({"a": 1}, {"a": 1000}, gputop_device_status=status,
                                DCGM_FI_DEV_GPU_UTIL=util), now=1000.0, stale_after=90.0)
    dev = nodes[0][4].devices[0]
    assert (dev.vendor, dev.status, dev.utilization_gpu_pct) == ("amd", "ok", 3.0)
