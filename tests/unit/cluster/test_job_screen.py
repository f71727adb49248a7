"""The cluster view's job screen: a Slurm job's GPUs on all its nodes side by side, its
straggler flagged with the reason; opened by `j` for the job watched (--slurm), or from a
node's screen for the job the selected GPU runs."""

from __future__ import annotations

import time
from dataclasses import replace

from gputop.cluster.node import NodeStatus
from gputop.commands.cluster import JobView
from gputop.core.model import Job, Process, Snapshot
from gputop.tui.cluster import ClusterApp, JobScreen, NodeScreen
from tests.support.scripted_cluster import ScriptedCluster
from tests.support.tui import screen_text, settle
from tests.unit.cluster.test_job_view import gpu


def node(host: str, slow: int | None = None) -> NodeStatus:
    """Two GPUs of job 4242 and one of another job; ``slow``: a GPU throttled to 61%."""
    def dev(index: int, job: str):
        d = gpu(index, clock=1200 if index == slow else 1980,
                reasons=("sw_thermal_slowdown",) if index == slow else ())
        return replace(d, processes=(Process(pid=100 + index, user="carol", name="python",
                                             job=Job("slurm", job)),))

    snap = Snapshot(host=host, time=0.0, backend="sim",
                    devices=(dev(0, "4242"), dev(1, "4242"), dev(2, "7")))
    return NodeStatus(host, "ok", "agent", "", snap, time.monotonic(), seq=1)


def statuses() -> list[NodeStatus]:
    return [node("n1"), node("n2", slow=1)]


async def test_j_opens_the_watched_job_with_its_straggler_flagged():
    view = JobView(ScriptedCluster(statuses()), {"4242"})
    app = ClusterApp(view, interval=1.0, refresh_s=3600, jobs=view.jobs, job_report=view.report)
    async with app.run_test(size=(160, 20)) as pilot:
        await settle(pilot)
        await pilot.press("j")
        await settle(pilot)
        assert isinstance(app.screen, JobScreen)
        text = screen_text(app)
        assert "job 4242  4 GPUs on 2 nodes" in text
        assert "straggler: GPU 1 on n2 is the slow one of the 4 GPUs of its job: SM clock 61%" \
            in text
        flagged = [line for line in text.splitlines() if "this GPU" in line]
        assert len(flagged) == 1 and flagged[0].split()[:2] == ["n2", "1"], text
        assert " 2 " not in "".join(line[:22] for line in text.splitlines()
                                    if line.startswith(("n1", "n2")))  # job 7's GPU is not there


async def test_a_job_picked_on_a_nodes_screen_opens_across_the_nodes():
    app = ClusterApp(ScriptedCluster(statuses()), interval=1.0, refresh_s=3600)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        await pilot.press("j")  # no job watched: a notice, no screen
        await settle(pilot)
        assert not isinstance(app.screen, JobScreen)
        app.open_node("n2")
        await settle(pilot)
        assert isinstance(app.screen, NodeScreen)
        await pilot.press("j")  # GPU 0 selected: job 4242's
        await settle(pilot)
        assert isinstance(app.screen, JobScreen) and app.screen.job == "4242"
        assert "straggler: GPU 1 on n2" in screen_text(app)
