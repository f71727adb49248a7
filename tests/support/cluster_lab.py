"""The ssh lab: real sshd servers on loopback and an ssh config whose aliases all reach them.

`build_lab` makes it; conftest.py holds it as a session fixture."""

from __future__ import annotations

import os
import shutil
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.ssh_harness import (
    Alias,
    SshServer,
    agent_command,
    find_sshd,
    free_port,
    keygen,
    python_command,
    write_ssh_config,
)

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
NVIDIA_CAPTURE = FIXTURES / "nvidia-smi" / "csv_all-fields_1xH100-80GB-HBM3_590.48.01_load.csv"
NPU_CAPTURE = FIXTURES / "npu-smi" / "info_910B2C-x2_npu-smi-23.0.2.1_1-process_trailing-spaces.txt"
INTERVAL = 0.5
REMOTE_PIDS = "remote-pids"  # in the lab folder: the PID of each fake nvidia-smi run

# alias -> remote command (None: the default `gputop agent`, which these remotes do not have)
AGENT_ALIASES = {
    "node-a": agent_command("training", INTERVAL, seed=1),
    "node-b": agent_command("idle", INTERVAL, seed=2),
    "node-c": agent_command("crowded", INTERVAL, seed=3),
    "node-k": agent_command("mixed", INTERVAL, seed=4),  # on the server that gets killed
    "wrongkey": agent_command("idle", INTERVAL),
    "changedkey": agent_command("idle", INTERVAL),
    "closed": agent_command("idle", INTERVAL),
    "blackhole": agent_command("idle", INTERVAL),
    "liar-garbage": python_command(HERE / "liar.py", "garbage"),
    "liar-huge": python_command(HERE / "liar.py", "huge"),
    "liar-schema": python_command(HERE / "liar.py", "schema"),
    "liar-hang": python_command(HERE / "liar.py", "hang"),
    "liar-noise": python_command(HERE / "liar.py", "noise"),
    "liar-badtypes": python_command(HERE / "liar.py", "badtypes"),
    "liar-overflow": python_command(HERE / "liar.py", "overflow"),
    "liar-bignum": python_command(HERE / "liar.py", "bignum"),
    "liar-nullsat": python_command(HERE / "liar.py", "nullsat"),
    "nogputop": None,
    "npunode": None,
    "nothing": None,
}


@dataclass
class Lab:
    tmp: Path
    main: SshServer
    killable: SshServer
    ssh_config: Path
    known_hosts: Path
    changed_known_hosts: Path
    blackhole: socket.socket
    identity: Path  # the client key every server authorizes

    def command(self, alias: str) -> str | None:
        return AGENT_ALIASES[alias]


def _fake_tool(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def build_lab(tmp: Path) -> Lab:
    client = tmp / "id_ed25519"
    client_pub = keygen(client)
    wrong = tmp / "wrong_ed25519"
    keygen(wrong)
    main = SshServer(tmp / "main", client_pub)
    killable = SshServer(tmp / "killable", client_pub)

    # A remote without gputop: the default command finds no `gputop` on this PATH, whereas a
    # fake nvidia-smi prints a real capture there, header first and then its rows each second,
    # as `nvidia-smi -l 1` would.
    # Each run writes its PID down first: sshd starts it in a fresh environment, and once its
    # session drops its parent is 1, so only its PID lets the lab stop a loop left behind.
    fakebin = tmp / "fakebin"
    fakebin.mkdir()
    _fake_tool(fakebin / "nvidia-smi",
               f"echo $$ >> '{tmp / REMOTE_PIDS}'\ncat '{NVIDIA_CAPTURE}'\n"
               f"while sleep 1; do tail -n +2 '{NVIDIA_CAPTURE}' || exit; done\n")
    emptybin = tmp / "emptybin"
    emptybin.mkdir()
    base_path = "/usr/bin:/bin"
    nogputop_port = main.add_port({"PATH": f"{fakebin}:{base_path}"})
    nothing_port = main.add_port({"PATH": f"{emptybin}:{base_path}"})
    # An Ascend node without gputop: a fake npu-smi prints a real `npu-smi info` capture.
    npubin = tmp / "npubin"
    npubin.mkdir()
    _fake_tool(npubin / "npu-smi", f"cat '{NPU_CAPTURE}'\n")
    npu_port = main.add_port({"PATH": f"{npubin}:{base_path}"})
    main.start()
    killable.start()
    known = tmp / "known_hosts"
    known.write_text(main.known_hosts_line() + "\n" + killable.known_hosts_line() + "\n")
    # The same address and port, another key: what a man in the middle (or a reinstall) shows.
    impostor = SshServer(tmp / "impostor", client_pub, port=main.port)
    impostor.extra_ports = list(main.extra_ports)
    changed = tmp / "known_hosts_changed"
    changed.write_text(impostor.known_hosts_line() + "\n")

    # Accepts TCP and never says a word: the slow node.
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(16)

    aliases = []
    for name in AGENT_ALIASES:
        server = killable if name == "node-k" else main
        alias = Alias(name, server, client, known)
        if name == "wrongkey":
            alias.identity = wrong
        elif name == "changedkey":
            alias.known_hosts = changed
        elif name == "closed":
            alias.port = free_port()
        elif name == "blackhole":
            alias.port = hole.getsockname()[1]
        elif name == "nogputop":
            alias.port = nogputop_port
        elif name == "nothing":
            alias.port = nothing_port
        elif name == "npunode":
            alias.port = npu_port
        aliases.append(alias)
    config = write_ssh_config(tmp / "ssh_config", aliases)
    return Lab(tmp, main, killable, config, known, changed, hole, client)


def close_lab(lab: Lab) -> None:
    """Stop the SSH servers, every session they forked, and by PID every fake tool run that
    outlived its session (parent 1, so no longer the servers' child)."""
    lab.main.kill()
    lab.killable.kill()
    lab.blackhole.close()
    stop_remote_tools(lab.tmp / REMOTE_PIDS, lab.tmp / "fakebin")


def stop_remote_tools(pid_file: Path, folder: Path) -> list[int]:
    """Kill each process ``pid_file`` names that still runs a tool from ``folder`` (a PID the
    kernel gave to another process since is left alone); return the PIDs killed."""
    import psutil

    try:
        pids = {int(line) for line in pid_file.read_text().split()}
    except FileNotFoundError:
        return []
    killed = []
    for pid in sorted(pids):
        try:
            proc = psutil.Process(pid)
            if str(folder) not in " ".join(proc.cmdline()):
                continue
            proc.kill()
            proc.wait(5)
            killed.append(pid)
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return killed


@pytest.fixture(scope="session", name="lab")
def lab_fixture(tmp_path_factory: pytest.TempPathFactory):
    """Build the lab once a test session (tests/e2e/cluster/conftest.py makes it the folder's)."""
    if find_sshd() is None:
        pytest.skip("OpenSSH server (sshd) is not installed: apt-get install openssh-server "
                    "(scripts/install-test-deps.sh installs it)")
    if shutil.which("ssh") is None and not os.access("/usr/bin/ssh", os.X_OK):
        pytest.skip("OpenSSH client (ssh) is not installed")
    lab = build_lab(tmp_path_factory.mktemp("ssh-lab"))
    yield lab
    close_lab(lab)
