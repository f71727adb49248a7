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


# ``scontrol show job -d``: one line per group of nodes with the same allocation,
#     Nodes=gpu[01-02] CPU_IDs=0-63 Mem=515000 GRES=gpu:a100:4(IDX:0-3)
# (``GRES_IDX=gpu(IDX:0-3)`` before Slurm 21.08). IDX numbers the node's GPUs as Slurm lists its
# device files, by minor number (/dev/nvidia0 first), which NVML's index need not follow.
_GRES_LINE = re.compile(r"^\s*Nodes=(\S+)\s.*?\bGRES(?:_IDX)?=(\S+)", re.MULTILINE)
_GPU_IDX = re.compile(r"(?:^|,)gpu(?::[\w.\-]+)*\(IDX:([\d,\-]+)\)")
MAX_GPUS_PER_NODE = 1024  # more than any node has; a longer range is not a GPU list


def parse_idx(text: str) -> frozenset[int] | None:
    """``0-1,3`` -> {0, 1, 3}; None where it is not such a list."""
    out: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()) or len(first + last) > 8:
            return None  # not a number, or one too long to be a GPU's
        lo, hi = int(first), int(last if dash else first)
        if hi < lo or hi >= MAX_GPUS_PER_NODE:
            return None
        out.update(range(lo, hi + 1))
    return frozenset(out)


def parse_job_gres(text: str) -> list[tuple[str, frozenset[int]]]:
    """(node list, the GPUs' GRES indices there) for each node group of a ``scontrol show job
    -d`` output that holds GPUs."""
    out = []
    for m in _GRES_LINE.finditer(text):
        found: set[int] = set()
        for gpu in _GPU_IDX.finditer(m.group(2)):
            idx = parse_idx(gpu.group(1))
            if idx is not None:
                found |= idx
        if found:
            out.append((m.group(1), frozenset(found)))
    return out


def job_gpus(job_id: str) -> dict[str, frozenset[int]]:
    """Node -> the GRES indices of the GPUs Slurm gave ``job_id`` there (none for a job that
    asked for no GPUs)."""
    if not _JOB_ID.match(job_id):
        raise SlurmError(f"not a Slurm job id: {job_id!r}")
    out: dict[str, frozenset[int]] = {}
    for nodelist, idx in parse_job_gres(_run(["scontrol", "show", "job", "-d", job_id])):
        for node in hostnames(nodelist):
            out[node] = out.get(node, frozenset()) | idx
    return out


def devices_by_gres(devices, idx: frozenset[int]) -> frozenset[int] | None:
    """The indices (NVML's) of the GPUs that GRES indices ``idx`` name on a node: IDX k is the
    GPU with the k-th smallest minor number. None where that cannot be told: a GPU whose minor
    number is unknown (an older agent, a device lost before it was read) or fewer GPUs than
    the indices need."""
    gpus = [d for d in devices if d.vendor == "nvidia"]
    if not gpus or not idx or any(d.minor_number is None for d in gpus):
        return None
    by_minor = sorted(gpus, key=lambda d: d.minor_number)
    if max(idx) >= len(by_minor):
        return None
    return frozenset(by_minor[k].index for k in idx)
