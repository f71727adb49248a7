"""The cluster screen, driven by a scripted cluster (no ssh): rows by key, sort, filter, users
view, a node opened in the dashboard widgets, remote text never read as markup."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.cluster.node import NodeStatus
from gputop.core.model import Process
from gputop.tui.cluster import ClusterApp, NodeScreen


def sim_snapshot(scenario: str, host: str):
    backend = SimBackend(BackendOptions(scenario=scenario))
    backend.open()
    snap = backend.sample()
    return replace(snap, host=host)


class ScriptedCluster:
    """A cluster source (gputop.cluster.source.ClusterSource) with statuses a test sets."""

    def __init__(self, statuses: list[NodeStatus]) -> None:
        self._statuses = {s.host: s for s in statuses}
        self._order = [s.host for s in statuses]
        self.version = 0
        self.problem = None
        self.started = self.stopped = False
        self.lock = threading.Lock()

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def statuses(self) -> list[NodeStatus]:
        return [self._statuses[h] for h in self._order]

    def status(self, host: str) -> NodeStatus:
        return self._statuses[host]

    def wait(self, predicate: Callable[[list[NodeStatus]], bool], timeout: float) -> bool:
        return predicate(self.statuses())  # statuses change only when the test sets them

    @staticmethod
    def settled(statuses: Sequence[NodeStatus]) -> bool:
        return True

    def detail(self, hosts: Collection[str] = (), every: bool = False) -> None:
        pass  # every node's snapshot is here whole

    def set(self, status: NodeStatus) -> None:
        old = self._statuses[status.host]
        self._statuses[status.host] = replace(status, seq=old.seq + 1)
        self.version += 1


def make_statuses(now: float) -> list[NodeStatus]:
    a = sim_snapshot("training", "node-a")
    b = sim_snapshot("idle", "node-b")
    # A process name and a reason full of markup: both must show literally.
    dev = a.devices[0]
    evil = Process(pid=999, user="[bold]mallory[/bold]", name="[red]x[/red]",
                   command="[link=http://x]click[/link]", gpu_memory_mib=1024.0)
    a = replace(a, devices=(replace(dev, processes=(*dev.processes, evil)), *a.devices[1:]))
    return [
        NodeStatus("node-a", "ok", "agent", "", a, now, seq=1),
        NodeStatus("node-b", "ok", "agent", "", b, now, seq=1),
        NodeStatus("node-x", "unreachable", "agent", "[b]Connection refused[/b]", seq=1),
        NodeStatus("node-y", "auth-failed", "agent", "Permission denied (publickey).", seq=1),
    ]


def cell_text(table, host: str, column: str) -> str:
    return table.cells(host)[column]


async def test_nodes_table_rows_by_key_sort_filter_and_markup():
    import time

    cluster = ScriptedCluster(make_statuses(time.monotonic()))
    app = ClusterApp(cluster, interval=1.0, refresh_s=0.05)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        table = app.nodes_table
        assert cluster.started
        assert table.row_count == 4
        # Trouble first by default.
        assert app._order[:2] == ["node-y", "node-x"]  # auth-failed, then unreachable
        assert cell_text(table, "node-x", "state") == "unreachable"
        assert cell_text(table, "node-x", "reason") == "[b]Connection refused[/b]"  # literal
        assert cell_text(table, "node-a", "gpus") == "8"
        assert cell_text(table, "node-b", "util") == "0%"
        # The screen shows the reason literally (cells are segments, never markup).
        line = table.render_line(1 + app._order.index("node-x")).text
        assert "[b]Connection refused[/b]" in line and "unreachable" in line
        rendered_before = table.rendered_rows
        # An update changes that row's cells in place: same rows, same keys.
        b = cluster.status("node-b")
        dev = b.snapshot.devices[0]
        hot = replace(b.snapshot, devices=tuple(replace(d, utilization_gpu_pct=100.0)
                                                for d in (dev, *b.snapshot.devices[1:])))
        cluster.set(replace(b, data=hot))
        await pilot.pause(0.2)
        assert cell_text(table, "node-b", "util") == "100%"
        assert table.row_count == 4
        # Only node-b's line was rebuilt, not the whole table.
        assert table.rendered_rows - rendered_before == 1
        # Sort by utilisation (U): busiest first; unknown (no data) last.
        await pilot.press("U")
        await pilot.pause()
        assert app._order[-2:] == ["node-x", "node-y"]
        assert app._order[0] in ("node-a", "node-b")
        # Filter by state.
        await pilot.press("slash")
        for ch in "state:auth-failed":
            await pilot.press(ch if ch != ":" else "colon")
        await pilot.pause()
        assert app._order == ["node-y"]
        await pilot.press("escape")
        await pilot.pause()
        assert table.row_count == 4


async def test_users_view_and_node_screen():
    import time

    cluster = ScriptedCluster(make_statuses(time.monotonic()))
    app = ClusterApp(cluster, interval=1.0, refresh_s=0.05)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        await pilot.press("u")
        await pilot.pause()
        users = app.users_table
        rows = [list(users.cells(k).values()) for k in users.keys()]
        by_user = {r[0]: r for r in rows}
        assert "[bold]mallory[/bold]" in by_user  # shown literally
        assert by_user["[bold]mallory[/bold]"][1] == "1"  # holds one GPU
        assert "node-a[0]" in by_user["[bold]mallory[/bold]"][4]
        # node-x and node-y have no data; their users (none) cannot appear.
        assert all("node-x" not in r[4] for r in rows)
        await pilot.press("u")
        await pilot.pause()
        # Enter on node-a opens it in the dashboard's widgets.
        table = app.nodes_table
        table.move_cursor(app._order.index("node-a"))
        await pilot.press("enter")
        await pilot.pause(0.2)
        screen = app.screen
        assert isinstance(screen, NodeScreen) and screen.host == "node-a"
        assert len(screen.dashboard.cards) == 8
        # Over a node, the dashboard's keys: M sorts its processes, not the nodes table.
        await pilot.press("M")
        await pilot.pause()
        assert screen.dashboard.table.sort_column == "gpu_mem"
        assert app.sort_field == "state"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, NodeScreen)
        # Themes cycle as in the dashboard.
        first = app.theme
        await pilot.press("t")
        assert app.theme != first
    assert cluster.stopped


async def test_real_nodes_over_ssh_in_the_cluster_screen(lab):
    import asyncio

    from gputop.cluster.hosts import HostSpec
    from gputop.cluster.node import Policy
    from gputop.cluster.transport import Cluster

    specs = [HostSpec(n, lab.command(n)) for n in ("node-a", "node-b", "closed")]
    cluster = Cluster(specs, Policy(interval=0.5, connect_timeout=3, backoff_max=1.0),
                      ssh_config=str(lab.ssh_config))
    app = ClusterApp(cluster, interval=0.5, refresh_s=0.1)
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.nodes_table
        for _ in range(150):
            await asyncio.sleep(0.1)
            if len(table.keys()) == 3 and all(
                    table.cells(h)["state"] == want for h, want in
                    (("node-a", "ok"), ("node-b", "ok"), ("closed", "unreachable"))):
                break
        assert table.cells("node-a")["gpus"] == "8"
        assert "Connection refused" in table.cells("closed")["reason"]
        assert app._order[0] == "closed"  # trouble first
        table.move_cursor(app._order.index("node-a"))
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert isinstance(app.screen, NodeScreen)
        for _ in range(30):
            await asyncio.sleep(0.1)
            if len(app.screen.dashboard.cards) == 8:
                break
        assert len(app.screen.dashboard.cards) == 8
        await pilot.press("q")
    # Quitting the screen closed every ssh session.
    assert not cluster._live
