"""The cluster source contract: both transports implement what the cluster screen and
``gputop cluster --once`` call on them (gputop.cluster.source), so no caller probes for a method."""

from __future__ import annotations

from gputop.cluster.hosts import hosts_from_names
from gputop.cluster.prometheus import PrometheusCluster
from gputop.cluster.source import ClusterSource
from gputop.cluster.transport import Cluster

MEMBERS = {name for name in vars(ClusterSource) if not name.startswith("_")}


def test_the_contract_names_what_the_views_call() -> None:
    assert MEMBERS == {"version", "problem", "start", "stop", "statuses", "status", "wait",
                       "settled", "detail"}


def test_both_transports_implement_every_member() -> None:
    ssh = Cluster(hosts_from_names(["node-a"]))  # never started: no ssh runs
    prometheus = PrometheusCluster("http://x", query=lambda *a: [])
    sources: list[ClusterSource] = [ssh, prometheus]  # mypy checks each against the contract
    for source in sources:
        assert sorted(n for n in MEMBERS if not hasattr(source, n)) == [], type(source).__name__
    prometheus.stop()
    ssh.stop()


def test_over_ssh_asking_for_detail_changes_nothing() -> None:
    # Every ssh session sends its node whole: the screen may ask, and nothing moves.
    ssh = Cluster(hosts_from_names(["node-a", "node-b"]))
    before = (ssh.version, ssh.statuses())
    ssh.detail({"node-a"}, every=True)
    assert (ssh.version, ssh.statuses()) == before
    ssh.stop()
