"""The dashboard and the cluster view show hostile names as text: what reaches the terminal (the
compositor's whole frame, as Textual writes it) holds no control character but Textual's own
colour and cursor sequences, on every screen a name is shown in; in a real terminal (tmux) a
process named ``ESC ]0;pwned`` leaves the window's title alone.

The names are real: real processes choose their ``argv[0]`` and ``comm`` (tests/support/hostile.py),
sit in real cgroups named as Slurm (a hostile step id) and LXC (a hostile container name) name
theirs, and in a pod and a Docker container whose names come from the kubelet's log folders
and Docker's config file; gputop's own host-process reader and attribution read them. Markup
such as ``[@click=app.quit]`` stays text."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sys
import time

import pytest

from gputop.backends.base import Backend
from gputop.cluster.node import NodeStatus
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, DeviceInfo, Hint, NodeInfo, Process, Snapshot
from gputop.host.attribution import Attribution, Places
from gputop.host.processes import HostProcesses
from gputop.tui.app import GputopApp
from gputop.tui.cluster import ClusterApp
from gputop.tui.screens.modals import ConfirmSignal
from gputop.tui.screens.process_view import ProcessView
from gputop.tui.widgets.processes import ProcessTable
from tests.support import cfake, hostile
from tests.support.kernel_lab import Lab
from tests.support.scripted_cluster import ScriptedCluster
from tests.support.tmux import Pane
from tests.support.tui import (
    screen_styles,
    screen_text,
    settle,
)

DOCKER_ID = "4f1c2d9e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d"
CRI_ID = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d"
POD_UID = "0125ec2f-b64a-4868-8f5b-94b56cbab864"
E = hostile.ESC
STEP = f"{E}]0;step{hostile.BEL}\u202e"  # a cgroup name may hold anything but / and a newline
LXC = f"box{E}[2J\u009b"
POD = f"pod{E}]52;c;eA=={hostile.BEL}\nx"  # a file name may hold a newline
NAMESPACE = f"ns{E}[6n"
CONTAINER = "ctr\u202e[@click=app.quit]quit"  # no "/" in a file name
DOCKER_NAME = f"/dock{E}]8;;http://evil.example/{E}\\"
DEVICE = f"H100 {E}]0;dev{hostile.BEL}"  # as a Prometheus target's modelName may say
LOST_REASON = f"gone{E}[2J\u202e"  # a lost GPU's reason, as a remote node may word it
# Textual's own output: colours (SGR) and cursor moves. Nothing else may carry an ESC.
OWN_SEQUENCES = re.compile(r"\x1b\[[0-9;]*[mH]")


@pytest.fixture
def node(tmp_path):
    """Real hostile processes placed in hostile cgroups; the kubelet's and Docker's files."""
    lab = Lab()
    try:
        with hostile.Hostiles() as procs:
            pids = procs.pids
            lab.place(pids["escapes"], f"slurm/uid_0/job_77/step_{STEP}")
            lab.place(pids["comma"], f"lxc.payload.{LXC}")
            lab.place(pids["newline"], f"kubepods/burstable/pod{POD_UID}/{CRI_ID}")
            lab.place(pids["bad-utf8"], f"system.slice/docker-{DOCKER_ID}.scope")
            (tmp_path / "pods" / f"{NAMESPACE}_{POD}_{POD_UID}").mkdir(parents=True)
            (tmp_path / "containers").mkdir()
            (tmp_path / "containers" / f"{POD}_{NAMESPACE}_{CONTAINER}-{CRI_ID}.log").touch()
            config = tmp_path / "docker" / "containers" / DOCKER_ID / "config.v2.json"
            config.parent.mkdir(parents=True)
            config.write_text(json.dumps({"Name": DOCKER_NAME}))
            places = Places(docker=str(tmp_path / "docker"), pod_logs=str(tmp_path / "pods"),
                            container_logs=str(tmp_path / "containers"))
            yield procs, places
    finally:
        lab.close()


class HostileBackend(Backend):
    """One GPU running the hostile processes, their facts read by gputop's own readers."""

    name = "fake"

    def __init__(self, pids: list[int], places: Places, host: str) -> None:
        self.pids = pids
        self.host = host
        self.reader = HostProcesses(Attribution(places))

    def info(self) -> NodeInfo:
        return NodeInfo(host=self.host, backend="fake",
                        devices=(DeviceInfo(index=0, name=DEVICE), DeviceInfo(index=1, name=DEVICE)))

    def sample(self, devices=None, *, wants: Wants | None = EVERYTHING) -> Snapshot:
        procs = []
        for pid in self.pids:
            f = self.reader.lookup(pid)
            procs.append(Process(pid=pid, user=f.user, name=f.name, command=f.command,
                                 started=f.started, container=f.owner.container, job=f.owner.job,
                                 gpu_memory_mib=1024.0, type="C"))
        hint = Hint(device=0, code="idle-allocated", severity="warning",
                    message=f"GPU 0 held idle by {procs[0].name}", advice=f"ask {procs[0].command}")
        return Snapshot(host=self.host, time=time.time(), backend="fake", hints=(hint,),
                        devices=(Device(index=0, name=DEVICE, memory_total_mib=81559.0,
                                        memory_used_mib=5120.0, processes=tuple(procs)),
                                 Device(index=1, name=DEVICE, status="lost",
                                        status_reason=LOST_REASON)))


def frame(app) -> str:
    """The whole screen as the terminal would receive it: each cell's text, and a link's
    escape sequence where a cell's style would make it one."""
    return "\n".join("".join(("\x1b]8;;" if style.link else "") + text for text, style in row)
                     for row in screen_styles(app))


def assert_inert(app, where: str) -> None:
    rest = OWN_SEQUENCES.sub("", frame(app))
    bad = sorted({c for c in rest if not c.isprintable() and c != "\n"})
    assert not bad, f"{where}: raw {bad} reached the terminal"


def select(app, pid: int) -> None:
    table = app.query_one(ProcessTable)
    table.move_cursor(next(i for i, k in enumerate(table.keys()) if k.endswith(f":{pid}")))


async def test_every_dashboard_screen_shows_hostile_names_as_text(node):
    procs, places = node
    backend = HostileBackend(list(procs.pids.values()), places, socket.gethostname())
    app = GputopApp(backend, autostart=False)
    async with app.run_test(size=(220, 50)) as pilot:
        app.sampler.tick()
        await settle(pilot)
        assert_inert(app, "main view")
        text = screen_text(app)
        assert "/opt/^[]0;pwned^G^[[2J^[]52;c;ZXZpbA==^G" in text  # the command column
        assert "H100 ^[]0;dev^G" in text  # the GPU card
        assert "LOST: gone^[[2J\\u202e" in text  # a lost GPU's card
        assert "GPU 1 is lost: gone^[[2J\\u202e" in text  # the hint bar (gputop's own hint)
        for mode in ("job", "user"):
            await pilot.press("b")
            await settle(pilot)
            assert app.query_one(ProcessTable).grouping == mode
            assert_inert(app, f"grouped by {mode}")
        await pilot.press("b")
        await settle(pilot)
        for kind in ("escapes", "newline", "comma", "bad-utf8"):
            select(app, procs.pids[kind])
            await pilot.press("d")
            await settle(pilot)
            assert isinstance(app.screen, ProcessView)
            assert_inert(app, f"process view of {kind}")
            text = screen_text(app)
            if kind == "escapes":
                assert hostile.MARKUP in text.replace("\n", "")  # markup stays text
                assert "77.^[]0;step^G\\u202e" in text
            if kind == "newline":
                assert "pod^[]52;c;eA==^G^Jx" in text and "ctr\\u202e[@click" in text
            if kind == "comma":
                assert "box^[[2J\\x9b" in text
            if kind == "bad-utf8":
                assert "BAD\ufffd\ufffd 3600" in text and "dock^[]8;;http" in text
            await pilot.press("escape")
            await settle(pilot)
        select(app, procs.pids["escapes"])
        await pilot.press("k")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmSignal)
        assert_inert(app, "the signal confirmation")
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        assert_inert(app, "the saturation panel")
        assert "held idle by ^[[2J\ufffd^G\\u202eX" in screen_text(app)
        assert app.is_running  # no markup action ran


async def test_the_cluster_view_shows_hostile_hosts_reasons_and_users_as_text(node):
    procs, places = node
    host = f"node{E}]0;host{hostile.BEL}\u202e"
    snap = HostileBackend(list(procs.pids.values()), places, host).sample()
    now = time.monotonic()
    cluster = ScriptedCluster([
        NodeStatus(host, "ok", "agent", "", snap, now, seq=1),
        NodeStatus(f"down{E}[2J", "unreachable", "agent", f"refused{E}[6n{hostile.MARKUP}",
                   seq=1)])
    # refreshed on mount and by each key; no timer refresh racing a node screen's composing
    app = ClusterApp(cluster, interval=1.0, refresh_s=3600)
    async with app.run_test(size=(220, 50)) as pilot:
        await settle(pilot)
        assert_inert(app, "nodes table")
        text = screen_text(app)
        assert "node^[]0;host^G…" in text and "refused^[[6n[@click=app.quit]" in text
        await pilot.press("u")
        await settle(pilot)
        assert_inert(app, "users view")
        await pilot.press("u")
        await settle(pilot)
        app.nodes_table.move_cursor(app._order.index(host))
        await pilot.press("enter")
        await settle(pilot)
        assert_inert(app, "the node's dashboard")
        assert "node^[]0;host^G\\u202e" in screen_text(app)
        assert app.is_running


def test_in_a_real_terminal_a_hostile_name_leaves_the_window_title_alone(tmp_path):
    """The dashboard on the C fake of NVML (tests/support/cfake.py), in tmux on its own socket: before
    the fix the escapes process retitled the window "pwned" and cleared the screen."""
    for why in (cfake.available(), None if shutil.which("tmux") else "tmux is needed"):
        if why is not None:
            pytest.fail(why)
    folder = cfake.build(tmp_path / "fakenvml")
    with hostile.Hostiles() as procs:
        env = {"TERM": "xterm-256color", "LD_LIBRARY_PATH": str(folder),
               "FAKENVML_CONFIG": str(procs.nvml_config(folder / "hostile.conf")),
               "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_STATE_HOME": str(tmp_path / "st"),
               "COLUMNS": "200", "LINES": "40"}  # not what pytest's environment may say
        pane = Pane(tmp_path, f"{sys.executable} -m gputop --backend nvml", env, size=(200, 40))
        gputop = None
        try:
            pane.wait_for("/opt/^[]0;pwned^G", 30)  # the start: a long command loses its middle
            gputop = pane.gputop_pid()
            assert pane.flag("pane_title") != "pwned"
            screen = pane.screen()
            assert "/opt/^[]0;pwned^G^[[2J^[]52;c;ZXZpbA==^G" in screen
            assert "/usr/bin/x^J31337,/usr/bin/forged" in screen and "BAD\ufffd\ufffd 3600" in screen
            pane.tmux("send-keys", "-t", "t", "q")
            assert pane.exit_status(10) == 0
        finally:
            if gputop is not None:
                try:
                    os.kill(gputop, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            pane.close()
