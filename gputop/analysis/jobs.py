"""What to call the job a GPU process belongs to: a Slurm job, a Kubernetes pod or a container."""

from __future__ import annotations

from typing import cast

from gputop.core.model import Process
from gputop.history import History


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
    return c.label


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


def whole_gpus(devices) -> dict[str, list[int]]:
    """Per job name, the GPUs all of whose processes belong to it."""
    out: dict[str, list[int]] = {}
    for dev in devices:
        names = {job_name(p) for p in dev.processes if not p.outside_pid_namespace}
        if dev.processes and len(names) == 1 and None not in names:
            out.setdefault(cast(str, names.pop()), []).append(dev.index)
    return out


def job_energy(history: History) -> list[dict]:
    """Energy of each job of the newest snapshot: the energy counter's delta, on the GPUs the
    job holds whole, since it has held them without a break (the runs of the GPU's holders in
    the history). ``complete`` says whether that covers the job since it started (its first
    process started inside the history); otherwise the figure is since ``since``. A GPU without
    an energy counter leaves ``energy_wh`` null, never 0."""
    latest = history.latest
    if latest is None:
        return []
    oldest = history.oldest
    oldest = oldest if oldest is not None else latest.time
    out = []
    for name, gpus in sorted(whole_gpus(latest.devices).items()):
        total = 0.0
        since = latest.time
        known = True
        for index in gpus:
            held = _held_whole_since(history, index, name, latest.time)
            times, energy = history.device_series(index, "energy_j", since=held)
            if not energy or energy[0] is None or energy[-1] is None:
                known = False
                continue
            total += energy[-1] - energy[0]
            since = min(since, times[0])
        started = [p.started for d in latest.devices if d.index in gpus for p in d.processes
                   if p.started is not None]
        out.append({
            "job": name, "devices": gpus,
            "energy_wh": round(total / 3600.0, 3) if known else None,
            "since": since,
            "complete": bool(started) and min(started) >= oldest,
        })
    return out


def _held_whole_since(history: History, index: int, name: str, now: float) -> float:
    """Since when the job ``name`` has held GPU ``index`` whole, without a break (``now`` where
    the history has no run of it)."""
    since = now
    for start, keys in reversed(history.holders(index)):
        rows = [history.process(k) for k in keys]
        if not keys or any(r is None or job_name(r.process) != name for r in rows):
            break
        since = start
    return since
