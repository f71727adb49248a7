"""A real OpenSSH server on 127.0.0.1 for the cluster tests and benchmark.

Each :class:`SshServer` is one `sshd -D` on a free port with its own temporary host key, an
authorized client key and its own sshd_config (no PAM, no strict modes, pid file in the temp dir).
:func:`write_ssh_config` writes a client config whose host aliases all reach a server, with the
host key pre-recorded and StrictHostKeyChecking on, so the tests see ssh exactly as a user would.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.paths import ROOT

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/usr/bin/sshd")


def find_sshd() -> str | None:
    found = shutil.which("sshd")
    if found:
        return os.path.abspath(found)
    for path in SSHD_CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path, kind: str = "ed25519") -> str:
    """Make a key pair at ``path``; return the public key line."""
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "gputop-test", "-f",
                    str(path)], check=True, stdin=subprocess.DEVNULL)
    return path.with_suffix(".pub").read_text().strip() if path.suffix else \
        Path(str(path) + ".pub").read_text().strip()


@dataclass
class SshServer:
    workdir: Path
    client_pub: str
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    extra_ports: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.host_key = self.workdir / "host_ed25519"
        self.host_pub = keygen(self.host_key)
        (self.workdir / "authorized_keys").write_text(self.client_pub + "\n")
        self.config = self.workdir / "sshd_config"
        self.log = self.workdir / "sshd.log"
        self.config.write_text("\n".join([
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {self.host_key}",
            f"PidFile {self.workdir / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.workdir / 'authorized_keys'}",
            "UsePAM no",
            "StrictModes no",
            "PermitRootLogin yes",  # we may be root here; sshd refuses root unless told
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PrintMotd no",
            "UseDNS no",
            "MaxStartups 500",
            "MaxSessions 500",
            "LogLevel ERROR",
            "",
        ]))

    def add_port(self, env: dict[str, str]) -> int:
        """Listen on another port whose sessions get ``env`` (sshd's own SetEnv, in a Match
        block: sshd resets PATH after applying what a client sends)."""
        port = free_port()
        settings = " ".join(f"{k}={v}" for k, v in env.items())
        text = self.config.read_text()
        head, sep, tail = text.partition("Match ")
        self.config.write_text(f"{head}Port {port}\n{sep}{tail}"
                               f"Match LocalPort {port}\n  SetEnv {settings}\n")
        self.extra_ports.append(port)
        return port

    def known_hosts_line(self) -> str:
        return "\n".join(f"[127.0.0.1]:{port} {self.host_pub}"
                         for port in (self.port, *self.extra_ports))

    def start(self, timeout: float = 10.0) -> None:
        sshd = find_sshd()
        assert sshd is not None
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir
        self.proc = subprocess.Popen([sshd, "-D", "-f", str(self.config), "-E", str(self.log)],
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited {self.proc.returncode}: {self.log_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    if s.recv(4).startswith(b"SSH-"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd did not listen on {self.port}: {self.log_text()}")

    def kill(self) -> None:
        """Kill the listener and every session it forked (they run in their own sessions)."""
        if self.proc is None:
            return
        import psutil

        try:
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        self.proc.kill()
        self.proc.wait(5)
        for child in children:
            try:
                child.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(children, timeout=5)
        self.proc = None

    def log_text(self) -> str:
        try:
            return self.log.read_text()[-2000:]
        except OSError:
            return ""


@dataclass
class Alias:
    name: str
    server: SshServer
    identity: Path
    known_hosts: Path
    port: int | None = None  # another port: a closed one, or one of the server's extra ports


def write_ssh_config(path: Path, aliases: list[Alias]) -> Path:
    lines = []
    for a in aliases:
        lines += [
            f"Host {a.name}",
            "  HostName 127.0.0.1",
            f"  Port {a.port or a.server.port}",
            f"  User {login_name()}",
            f"  IdentityFile {a.identity}",
            "  IdentitiesOnly yes",
            f"  UserKnownHostsFile {a.known_hosts}",
            "  GlobalKnownHostsFile /dev/null",
            "  StrictHostKeyChecking yes",
            "  ControlMaster no",
            "  LogLevel ERROR",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_bare_ssh_config(path: Path, known_hosts: Path) -> Path:
    """A client config that checks host keys against ``known_hosts`` and says nothing else: the
    port, key and login name must come from the command line (a hosts file's ``ssh_args``)."""
    path.write_text("\n".join([
        "Host *",
        f"  UserKnownHostsFile {known_hosts}",
        "  GlobalKnownHostsFile /dev/null",
        "  StrictHostKeyChecking yes",
        "  IdentitiesOnly yes",
        "  ControlMaster no",
        "  LogLevel ERROR",
        "",
    ]))
    return path


def login_name() -> str:
    import pwd

    return os.environ.get("USER") or pwd.getpwuid(os.getuid()).pw_name


def agent_command(scenario: str, interval: float = 1.0, seed: int = 0,
                  extra: tuple[str, ...] = ()) -> str:
    """The remote command that runs this checkout's agent on the simulator."""
    return gputop_command("agent", "--backend", "sim", "--scenario", scenario, "--seed",
                          str(seed), "--interval", f"{interval:g}", *extra)


def gputop_command(*args: str) -> str:
    """The remote command that runs this checkout's ``gputop ARGS``."""
    argv = [sys.executable, "-m", "gputop", *args]
    return (f"cd {shlex.quote(str(ROOT))} && PYTHONPATH={shlex.quote(str(ROOT))} exec "
            + " ".join(shlex.quote(a) for a in argv))


def python_command(script: Path, *args: str) -> str:
    argv = [sys.executable, str(script), *args]
    return (f"cd {shlex.quote(str(ROOT))} && PYTHONPATH={shlex.quote(str(ROOT))} exec "
            + " ".join(shlex.quote(a) for a in argv))


def toml_hosts(path: Path, hosts: list[tuple]) -> Path:
    """A hosts file: (name, remote_command or None[, ssh_args])."""
    import json

    out = []
    for name, command, *ssh_args in hosts:
        out.append("[[host]]")
        out.append(f"name = {json.dumps(name)}")
        if command is not None:
            out.append(f"remote_command = {json.dumps(command)}")
        if ssh_args:
            out.append(f"ssh_args = {json.dumps(ssh_args[0])}")
        out.append("")
    path.write_text("\n".join(out))
    return path
