"""What a web viewer may do to the serving machine: a read-only viewer writes no file, and a
viewer allowed to signal reaches only the serving user's own processes, never by root's
privilege. A real `gputop web` on 127.0.0.1, keys typed over its websocket.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.support import cfake
from tests.support.web_server import RawViewer, start_web

SIM = ("--backend", "sim", "--interval", "0.2")
NOBODY = 65534
CTRL_P = "\x10"
DOWN = "\x1b[B"


def type_keys(viewer: RawViewer, *keys: str, settle: float = 0.4) -> None:
    """Each key as a browser sends it, the app's answer read in between."""
    for key in keys:
        viewer.press(key)
        viewer.drain(settle)


def files_written(tmp_path: Path, *more: str, awaited: int = 0) -> dict[str, list[str]]:
    """What `gputop web` writes to, given these options: the record folder and $HOME.

    With ``awaited``, the viewer stays until the record folder holds that many files (or 10 s
    have passed): on a busy machine the screenshot can land after the keys' fixed settle."""
    record, home = tmp_path / "record", tmp_path / "home"
    record.mkdir(parents=True)
    home.mkdir()
    server = start_web(*SIM, *more, "--", "--record-dir", str(record), env={"HOME": str(home)})
    try:
        viewer = RawViewer(server)
        assert viewer.read(1000) >= 1000
        type_keys(viewer, "r")  # start a recording …
        viewer.drain(0.5)  # … of a few samples
        type_keys(viewer, "r")
        type_keys(viewer, CTRL_P, "Screenshot", "\r")  # the palette's screenshot
        deadline = time.monotonic() + 10
        while len(list(record.iterdir())) < awaited and time.monotonic() < deadline:
            viewer.drain(0.1)
        viewer.vanish()
    finally:
        server.stop()
    return {str(folder.name): sorted(p.name for p in folder.rglob("*"))
            for folder in (record, home)}


def test_a_read_only_viewer_writes_no_file(tmp_path):
    assert files_written(tmp_path / "ro") == {"record": [], "home": []}
    # The same keys from a viewer the serving user allowed to act: a recording and a
    # screenshot, so the keys above did arrive.
    allowed = files_written(tmp_path / "rw", "--allow-signals", awaited=3)
    # the recording is its CSV log and its stream beside it (docs/waste.md)
    assert sorted(Path(n).suffix for n in allowed["record"]) == [".csv", ".ndjson", ".svg"], \
        allowed
    assert allowed["home"] == [], allowed


def start_as(uid: int) -> subprocess.Popen:
    """A process of user ``uid`` (this test runs as root), its own session."""
    return subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL,
                            user=uid if uid != os.getuid() else None, start_new_session=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a process of another user is made "
                    "with setuid, and root's privilege is what a viewer must not borrow")
@pytest.mark.skipif(cfake.available() is not None, reason=f"fake NVML: {cfake.available()}")
def test_a_web_viewer_signals_only_the_serving_users_own_processes(tmp_path):
    # The server runs as root: from its shell root could signal anyone. Its viewers may signal
    # only what root owns (the rule for a sender without privilege), so that whoever holds the
    # page is not lent root's power over every user of the node.
    nobody, own = start_as(NOBODY), start_as(os.getuid())
    procs = [nobody, own]
    try:
        assert psutil.Process(nobody.pid).uids().real == NOBODY
        folder = cfake.build(tmp_path / "fakenvml")
        config = folder / "node.conf"
        # GPU 0 runs nobody's process, GPU 1 root's: the table lists them in that order.
        config.write_text(f"gpu_count=2\ngpu.0.procs={nobody.pid}:6G\n"
                          f"gpu.1.procs={own.pid}:7G\n")
        env = {"LD_LIBRARY_PATH": str(folder), "FAKENVML_CONFIG": str(config)}
        server = start_web("--backend", "nvml", "--interval", "0.5", "--allow-signals", env=env)
        try:
            viewer = RawViewer(server, width=160, height=50)
            assert viewer.read(1000) >= 1000
            viewer.drain(1.5)  # the first samples, with the processes
            type_keys(viewer, "K", "y")  # SIGKILL to the selected row: nobody's process
            viewer.drain(1.0)
            assert nobody.poll() is None, "a web viewer killed another user's process"
            type_keys(viewer, DOWN, "K", "y")  # root's own process: the keys do reach it
            deadline = time.monotonic() + 5
            while own.poll() is None and time.monotonic() < deadline:
                viewer.drain(0.2)
            assert own.returncode == -signal.SIGKILL
            assert nobody.poll() is None
            viewer.vanish()
        finally:
            server.stop()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(10)


def test_the_rule_a_viewer_is_held_to(tmp_path):
    """signals.refusal: root in a terminal may signal anyone's process; a web viewer, only the
    serving user's own (real or saved user, as the kernel checks a sender without privilege)."""
    from gputop.host.signals import refusal

    own = start_as(os.getuid())
    procs = [own]
    try:
        assert refusal(own.pid, owner_only=True) is None
        if os.geteuid() == 0:
            nobody = start_as(NOBODY)
            procs.append(nobody)
            assert refusal(nobody.pid) is None  # root in its terminal
            reason = refusal(nobody.pid, owner_only=True)
            assert reason and "another user (uid 65534)" in reason and "web viewer" in reason
        else:
            assert "another user" in refusal(1, owner_only=True)  # init: root's
    finally:
        for p in procs:
            p.kill()
            p.wait(10)
