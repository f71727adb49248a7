"""What to call the job a GPU process belongs to: a Slurm job, a Kubernetes pod or a container."""

from __future__ import annotations

from gputop.model import Process


def job_label(proc: Process) -> str | None:
    """Slurm ``JOB.STEP`` (Slurm's own notation), else ``namespace/pod``, else the container's
    name or short id; None for a process that belongs to none of them."""
    job = proc.job
    if job is not None:
        return f"{job.id}.{job.step}" if job.step else job.id
    c = proc.container
    if c is None:
        return None
    if c.pod:
        return f"{c.pod_namespace}/{c.pod}" if c.pod_namespace else c.pod
    if c.pod_uid:
        return f"pod {c.pod_uid[:8]}"
    if c.name:
        return c.name
    return c.id[:12] if c.id else None


def job_name(proc: Process) -> str | None:
    """The job as a person names it in a sentence, steps of one Slurm job together:
    ``job 4242``, ``pod research/trainer-0``, ``container llama-finetune``."""
    if proc.job is not None:
        return f"job {proc.job.id}"
    label = job_label(proc)
    if label is None:
        return None
    c = proc.container
    return label if label.startswith("pod ") else (
        f"pod {label}" if c is not None and (c.pod or c.pod_uid) else f"container {label}")


def gpu_list(indices: list[int]) -> str:
    """``0–7`` for a run of GPUs, else ``0,2,5``."""
    s = sorted(indices)
    if len(s) > 2 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}–{s[-1]}"
    return ",".join(str(i) for i in s)
