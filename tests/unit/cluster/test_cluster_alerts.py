"""The cluster view's alerts: one engine over every node's snapshots, each alert named by the
node as the view names it, each snapshot evaluated once, and the screen's notice and marker."""

from __future__ import annotations

import time
from dataclasses import replace

from gputop.alerts.runtime import read_config
from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.cluster.alerts import ClusterAlerts
from gputop.cluster.node import NodeStatus
from gputop.cluster.summary import summarize_snapshot
from gputop.core.model import Snapshot
from gputop.tui.cluster import ClusterApp
from tests.support.scripted_cluster import ScriptedCluster
from tests.support.settings_file import config_home_fixture, write_settings  # noqa: F401
from tests.support.tui import screen_text, settle

RULES = {"defaults": False, "rule": [{"name": "hot", "when": "temperature_c > 90"}]}


def alerts() -> ClusterAlerts:
    return ClusterAlerts(replace(read_config(RULES, "test"), journal=None))


def sample(temperature: float, at: float) -> Snapshot:
    backend = SimBackend(BackendOptions(scenario="training"))
    backend.open()
    snap = backend.sample()
    backend.close()
    devices = (replace(snap.devices[0], temperature_c=temperature), *snap.devices[1:])
    return replace(snap, host="same-hostname", time=at, devices=devices)


def status(host: str, snap: Snapshot | None, received: float) -> NodeStatus:
    data = snap if snap is not None else summarize_snapshot(sample(95, 0))
    return NodeStatus(host, "ok", "agent", "", data, received, seq=1)


def test_each_alert_is_named_by_the_views_node_and_each_snapshot_evaluated_once():
    watch = alerts()
    hot = sample(95, 100.0)
    first = watch.observe([status("a", hot, 1.0), status("b", hot, 1.0),
                           status("prom", None, 1.0)])  # a summary alone: nothing to evaluate
    assert [(a.key, a.state) for a in first] == [("hot/a/gpu0", "firing"),
                                                 ("hot/b/gpu0", "firing")]
    assert watch.observe([status("a", hot, 1.0), status("b", hot, 1.0)]) == ()  # nothing new
    cool = watch.observe([status("a", sample(50, 102.0), 2.0), status("b", hot, 1.0)])
    assert [(a.key, a.state) for a in cool] == [("hot/a/gpu0", "resolved")]
    assert watch.firing_by_node() == {"b": 1}


async def test_the_screen_names_the_node_in_a_notice_and_counts_its_alerts():
    now = time.monotonic()
    cluster = ScriptedCluster([status("gpu-a", sample(95, 100.0), now),
                               status("gpu-b", sample(50, 100.0), now)])
    app = ClusterApp(cluster, interval=1.0, refresh_s=3600, alerts=alerts())
    async with app.run_test(size=(160, 20)) as pilot:
        await settle(pilot)
        notices = [n.message for n in app._notifications]
        assert any(n.startswith("gpu-a: GPU 0 temperature 95 °C > 90") for n in notices), notices
        text = screen_text(app)
        assert "gpu-a ⚠1" in text and "gpu-b ⚠" not in text


def test_the_live_view_alerts_where_the_settings_file_has_an_alerts_table(config_home):
    from gputop.commands.cluster import ClusterConfig, cluster_alerts

    assert cluster_alerts(ClusterConfig()) is None  # no file: no cost, as before
    write_settings(config_home, 'theme = "nord"\n')
    assert cluster_alerts(ClusterConfig()) is None
    write_settings(config_home, "[alerts]\n")
    found = cluster_alerts(ClusterConfig())
    assert found is not None and [r.name for r in found.alerting.config.rules][:1] == ["xid"]
    found.close()


def test_a_bad_rule_stops_the_cluster_view_before_any_node_is_connected(
        config_home, monkeypatch, capsys):
    import gputop.commands.cluster as cluster_command
    from gputop.commands.main import main

    def refuse(*args, **kwargs):
        raise AssertionError("a node was connected")

    monkeypatch.setattr(cluster_command, "make_cluster", refuse)
    write_settings(config_home, '[alerts]\n[[alerts.rule]]\nname = "hot"\nwhen = "hot"\n')
    assert main(["cluster", "node1"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "alert rule 'hot'" in err[0], err
    assert main(["cluster", "--once", "--config", "x.toml", "node1"]) == 2
    assert "not --once's" in capsys.readouterr().err
