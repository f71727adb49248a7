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
