"""The nodes of Slurm jobs, for ``gputop cluster --slurm JOBID`` / ``--slurm-me``.

Asked of Slurm's own commands (``squeue``, ``scontrol show hostnames``; for the GPUs a job was
given, ``scontrol show job -d`` and ``sinfo``), run with argv lists (never a shell) by the shared
bounded runner (gputop/core/toolrun.py): a timeout, at most ``toolrun.MAX_OUTPUT_BYTES`` of output,
the tool's whole process group killed on every way out. Their output is untrusted: text that is
not UTF-8, a node name that is not a host name or a job id that is not one is refused. Anything
wrong is one ``SlurmError`` line naming the tool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gputop.core import toolrun
from gputop.core.errors import GputopError, UsageError
from gputop.core.userfile import FileProblem, decode, one_line

TIMEOUT_S = 15.0
# 4242, an array task 4242_7, a het part 4242+1 (ASCII digits: what Slurm prints)
_JOB_ID = re.compile(r"^\d+(?:_\d+)?(?:\+\d+)?\Z", re.ASCII)


class SlurmError(GputopError):
    """Why Slurm could not tell us a job's nodes, as one line."""


def _name(argv: list[str]) -> str:
    """The tool as a message names it: ``squeue``, ``scontrol show job`` (its leading words)."""
    words = [argv[0]]
    for arg in argv[1:3]:
        if not arg.isalpha():
            break
        words.append(arg)
    return " ".join(words)


def _run(argv: list[str]) -> str:
    """The standard output of a Slurm command that succeeded, as text; SlurmError otherwise."""
    name = _name(argv)
    try:
        done = toolrun.run(argv, TIMEOUT_S)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]} not found: is Slurm installed on this machine?") from None
    except OSError as exc:
        raise SlurmError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    except toolrun.ToolTimeout:
        raise SlurmError(f"{name} did not answer in {TIMEOUT_S:.0f} s: stopped it") from None
    except toolrun.ToolOutputTooLarge:
        raise SlurmError(f"{name} printed more than {toolrun.MAX_OUTPUT_BYTES >> 20} MiB, more "
                         "than any real answer: stopped it") from None
    if done.returncode != 0:
        raise SlurmError(f"{argv[0]}: {done.message() or f'exit status {done.returncode}'}")
    try:
        return decode(done.stdout)
    except FileProblem as exc:
        raise SlurmError(f"{name} printed something that is not a Slurm answer: {exc}") from None


def hostnames(nodelist: str) -> list[str]:
    """``gpu[01-03],big`` -> ``gpu01 gpu02 gpu03 big``, as Slurm itself expands it; each one a
    host name ssh can be given (SlurmError otherwise)."""
    from gputop.cluster.hosts import validate_host

    names = _run(["scontrol", "show", "hostnames", nodelist]).split()
    try:
        return [validate_host(n, "scontrol show hostnames") for n in names]
    except UsageError as exc:  # Slurm's answer is at fault, not the user's command line
        raise SlurmError(str(exc)) from None


def valid_job_id(text: str) -> bool:
    """Whether ``text`` is a job id as Slurm prints one (``4242``, ``4242_7``, ``4242+1``)."""
    return bool(_JOB_ID.match(text))


def _job_id(text: str, tool: str) -> str:
    if not _JOB_ID.match(text):
        raise SlurmError(f"{tool} printed {text[:40]!r} where a job id belongs")
    return text


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
        raise SlurmError(f"job {job_id} has no nodes yet ({one_line(lines[0].split()[0], 40).lower()})")
    return nodes


def my_jobs() -> dict[str, list[str]]:
    """The running jobs of the user running gputop: job id -> nodes."""
    out: dict[str, list[str]] = {}
    for line in _run(["squeue", "-h", "--me", "-t", "RUNNING", "-o", "%i %N"]).splitlines():
        job, _, nodelist = line.strip().partition(" ")
        if job and nodelist:
            job = _job_id(job, "squeue")
            out[job] = hostnames(nodelist)
    if not out:
        raise SlurmError("you have no running Slurm jobs")
    return out


# ``scontrol show job -d``: one line per group of nodes with the same allocation,
#     Nodes=gpu[01-02] CPU_IDs=0-63 Mem=515000 GRES=gpu:a100:4(IDX:0-3)
# (``GRES_IDX=gpu(IDX:0-3)`` before Slurm 21.08). IDX numbers the node's GPUs as Slurm lists its
# device files, by minor number (/dev/nvidia0 first), which NVML's index need not follow.
_GRES_LINE = re.compile(r"^\s*Nodes=(\S+)\s.*?\bGRES(?:_IDX)?=(\S+)", re.MULTILINE)
_GPU_IDX = re.compile(r"(?:^|,)gpu(?::[\w.\-]+)*\(IDX:([\d,\-]+)\)", re.ASCII)
MAX_GPUS_PER_NODE = 1024  # more than any node has; a longer range is not a GPU list


def _digits(text: str) -> bool:
    """ASCII digits, as Slurm prints them (``str.isdigit`` also takes ``²``, which int() refuses)."""
    return text.isascii() and text.isdigit()


def parse_idx(text: str) -> frozenset[int] | None:
    """``0-1,3`` -> {0, 1, 3}; None where it is not such a list."""
    out: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.partition("-")
        if not _digits(first) or (dash and not _digits(last)) or len(first + last) > 8:
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


# ``sinfo -N -o "%N %G"``: each node's configured GRES, ``gpu:4``, ``gpu:a100:8(S:0-1)``,
# ``gpu:a100:2,gpu:v100:2``; the GPUs are the counts of its ``gpu`` entries.
_GPU_COUNT = re.compile(r"(?:^|,)gpu(?::[^:,()\s]+)*:(\d{1,4})(?=[(,]|$)", re.ASCII)


def parse_node_gpus(text: str) -> dict[str, int]:
    """Node -> how many GPUs Slurm manages there, from ``sinfo -N -h -o "%N %G"`` lines."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        node, _, gres = line.strip().partition(" ")
        if node:
            out[node] = sum(int(m.group(1)) for m in _GPU_COUNT.finditer(gres.strip()))
    return out


@dataclass(frozen=True)
class GpuGrant:
    """What Slurm gave a job on one node: the GPUs' GRES indices, and how many GPUs Slurm
    manages on that node (None where sinfo did not say)."""

    idx: frozenset[int]
    node_gpus: int | None


def job_gpus(job_id: str) -> dict[str, GpuGrant]:
    """Node -> the GPUs Slurm gave ``job_id`` there (none for a job that asked for no GPUs).
    Two questions whatever the number of nodes: ``scontrol show job -d``, then ``sinfo`` for
    the nodes' GRES (and ``scontrol show hostnames`` per node group)."""
    if not _JOB_ID.match(job_id):
        raise SlurmError(f"not a Slurm job id: {job_id!r}")
    groups = parse_job_gres(_run(["scontrol", "show", "job", "-d", job_id]))
    if not groups:
        return {}
    counts = parse_node_gpus(_run(["sinfo", "-N", "-h", "-n", ",".join(n for n, _ in groups),
                                   "-o", "%N %G"]))
    given: dict[str, frozenset[int]] = {}
    for nodelist, idx in groups:
        for node in hostnames(nodelist):
            given[node] = given.get(node, frozenset()) | idx
    return {node: GpuGrant(idx, counts.get(node)) for node, idx in given.items()}


def devices_by_gres(devices, grant: GpuGrant) -> frozenset[int] | None:
    """The indices (NVML's) of the GPUs a grant names on a node. Slurm numbers the GPUs it
    manages by their device files, so IDX k is the GPU with the k-th smallest minor number,
    where Slurm manages every GPU of the node. None where that cannot be told rather than
    guessed: Slurm manages another number of GPUs than the node shows (a gres.conf naming some
    of them), a minor number unknown (an older agent, a device lost before it was read) or not
    one per GPU, or MIG on (its GRES count the instances)."""
    gpus = [d for d in devices if d.vendor == "nvidia"]
    minors = [d.minor_number for d in gpus]
    if (not grant.idx or len(gpus) != grant.node_gpus
            or any(type(m) is not int or m < 0 for m in minors) or len(set(minors)) != len(gpus)
            or any(d.mig_mode == "enabled" for d in gpus) or max(grant.idx) >= len(gpus)):
        return None
    by_minor = sorted(gpus, key=lambda d: d.minor_number)
    return frozenset(by_minor[k].index for k in grant.idx)
