"""The nodes of Slurm jobs, for ``gputop cluster --slurm JOBID`` / ``--slurm-me``.

Asked of Slurm's own commands (``squeue``, ``scontrol show hostnames``), run with argv lists
(never a shell) and a timeout; anything wrong is one ``SlurmError`` line.
"""

from __future__ import annotations

import re
import subprocess

from gputop.errors import GputopError

TIMEOUT_S = 15.0
_JOB_ID = re.compile(r"^\d+(?:_\d+)?(?:\+\d+)?$")  # 4242, an array task 4242_7, a het part 4242+1


class SlurmError(GputopError):
    """Why Slurm could not tell us a job's nodes, as one line."""


def _run(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]} not found: is Slurm installed on this machine?") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{' '.join(argv[:2])} did not answer in {TIMEOUT_S:.0f} s") from None
    if out.returncode != 0:
        lines = (out.stderr or out.stdout).strip().splitlines()
        why = lines[0] if lines else f"exit status {out.returncode}"
        raise SlurmError(f"{argv[0]}: {why}")
    return out.stdout


def hostnames(nodelist: str) -> list[str]:
    """``gpu[01-03],big`` -> ``gpu01 gpu02 gpu03 big``, as Slurm itself expands it."""
    return _run(["scontrol", "show", "hostnames", nodelist]).split()


def job_nodes(job_id: str) -> list[str]:
    if not _JOB_ID.match(job_id):
        raise SlurmError(f"not a Slurm job id: {job_id!r}")
    lines = [line.strip() for line in _run(["squeue", "-h", "-j", job_id, "-o", "%T %N"])
             .splitlines() if line.strip()]
    if not lines:
        raise SlurmError(f"job {job_id} is not in the queue (finished, or never existed)")
    nodes: list[str] = []
    for line in lines:
        state, _, nodelist = line.partition(" ")
        if nodelist and nodelist != "(null)":
            nodes += [n for n in hostnames(nodelist) if n not in nodes]
    if not nodes:
        raise SlurmError(f"job {job_id} has no nodes yet ({lines[0].split()[0].lower()})")
    return nodes


def my_jobs() -> dict[str, list[str]]:
    """The running jobs of the user running gputop: job id -> nodes."""
    out: dict[str, list[str]] = {}
    for line in _run(["squeue", "-h", "--me", "-t", "RUNNING", "-o", "%i %N"]).splitlines():
        job, _, nodelist = line.strip().partition(" ")
        if job and nodelist:
            out[job] = hostnames(nodelist)
    if not out:
        raise SlurmError("you have no running Slurm jobs")
    return out
