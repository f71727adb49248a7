"""A real Slurm (Debian's munge, slurmctld, slurmd) on 127.0.0.1 in a temp folder, started by the
tests and stopped by PID: one node named as this machine, or several named nodes, each its own
slurmd (``slurmd -N NAME`` on its own port, spool, log and PID file; Debian's Slurm is built with
multiple-slurmd support). Slurm 22.05 authenticates with munge only, so a munged of our own runs
on a socket in the same folder."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Slurm:
    def __init__(self, root: Path, gpus: int = 0, nodes: tuple[str, ...] = ()) -> None:
        """``gpus``: GPUs for Slurm's GRES on each node, as character devices of NVIDIA's major
        number (195) made in ``root``: Slurm allocates them by index (``scontrol show job -d``'s
        IDX) as it would /dev/nvidia0…N-1; nothing opens them. ``nodes``: the nodes' names, each
        a slurmd of its own on this machine (none: one node named as this machine)."""
        self.root = root
        self.gpus = gpus
        self.host = socket.gethostname().split(".")[0]
        self.nodes = nodes or (self.host,)
        self.pids: list[Path] = []
        self.jobs: list[str] = []
        self.env = {**os.environ, "SLURM_CONF": str(root / "slurm.conf")}

    def start(self) -> None:
        r = self.root
        for d in ("munge", "state", "spool"):
            (r / d).mkdir(mode=0o700)
        key = r / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        sock = r / "munge" / "munge.socket"
        gres, node_gres = "", ""
        if self.gpus:
            (r / "dev").mkdir()
            for minor in range(self.gpus):
                os.mknod(r / "dev" / f"nvidia{minor}", 0o600 | stat.S_IFCHR,
                         os.makedev(195, minor))
            (r / "gres.conf").write_text(
                f"AutoDetect=off\nName=gpu File={r / 'dev'}/nvidia[0-{self.gpus - 1}]\n")
            gres, node_gres = "GresTypes=gpu\n", f" Gres=gpu:{self.gpus}"
        subprocess.run(["munged", f"--key-file={key}", f"--socket={sock}",
                        f"--pid-file={r / 'munge/munged.pid'}", f"--log-file={r / 'munged.log'}",
                        f"--seed-file={r / 'munge/seed'}", "--force"], check=True, timeout=20)
        self.pids.append(r / "munge/munged.pid")
        named = self.nodes != (self.host,)
        suffix = "-%n" if named else ""  # slurmd -N NAME: %n is NAME
        if named:
            node_lines = "\n".join(
                f"NodeName={n} NodeHostname={self.host} NodeAddr=127.0.0.1 Port={_free_port()} "
                f"CPUs=1{node_gres} State=UNKNOWN" for n in self.nodes)
        else:
            node_lines = f"NodeName={self.host} NodeAddr=127.0.0.1 CPUs=1{node_gres} State=UNKNOWN"
        (r / "slurm.conf").write_text(f"""\
ClusterName=gputoptest
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}{suffix}
SlurmctldPidFile={r / 'slurmctld.pid'}
SlurmdPidFile={r / 'slurmd'}{suffix}.pid
SlurmctldLogFile={r / 'slurmctld.log'}
SlurmdLogFile={r / 'slurmd'}{suffix}.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
{gres}{node_lines}
PartitionName=debug Nodes={",".join(self.nodes)} Default=YES MaxTime=INFINITE State=UP
""")
        subprocess.run(["slurmctld", "-i"], env=self.env, check=True, timeout=20)
        self.pids.append(r / "slurmctld.pid")
        for node in self.nodes:
            if named:
                (r / f"spool-{node}").mkdir(mode=0o700)
            subprocess.run(["slurmd", *(["-N", node] if named else [])], env=self.env,
                           check=True, timeout=20)
            self.pids.append(r / (f"slurmd-{node}.pid" if named else "slurmd.pid"))
        self.wait_for(lambda: self.run("sinfo", "-h", "-N", "-o", "%T").split()
                      == ["idle"] * len(self.nodes), "idle nodes")

    def run(self, *argv: str) -> str:
        return subprocess.run(argv, env=self.env, capture_output=True, text=True,
                              timeout=20).stdout

    def wait_for(self, cond, what: str, seconds: float = 30.0) -> None:
        deadline = time.monotonic() + seconds
        while not cond():
            if time.monotonic() > deadline:
                raise RuntimeError(f"Slurm gave no {what} in {seconds:.0f} s: "
                                   + (self.root / "slurmctld.log").read_text()[-2000:])
            time.sleep(0.2)

    def submit(self, command: str, *options: str) -> str:
        out = self.run("sbatch", "--parsable", "-o", "/dev/null", *options, "--wrap",
                       command).strip()
        self.jobs.append(out)
        self.wait_for(lambda: self.run("squeue", "-h", "-j", out, "-o", "%T").strip() == "RUNNING",
                      f"running job {out}")
        return out

    def stop(self) -> None:
        if self.jobs:  # a job's slurmstepd outlives slurmd: end the jobs first
            self.run("scancel", *self.jobs)
            try:
                self.wait_for(lambda: not self.run("squeue", "-h", "-o", "%i").strip(),
                              "empty queue", 15)
            except RuntimeError:
                pass
        # The jobs are gone: every daemon (slurmds, slurmctld, munged) is signalled at once,
        # each taking about 2 s to go, then each waited for.
        pids = []
        for pid_file in self.pids:
            try:
                pid = int(pid_file.read_text().split()[0])
                os.kill(pid, signal.SIGTERM)
            except (OSError, ValueError, IndexError):
                continue
            pids.append(pid)
        deadline = time.monotonic() + 5
        for pid in pids:
            while True:
                try:
                    os.kill(pid, 0)
                except OSError:
                    break
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    break
                time.sleep(0.05)
