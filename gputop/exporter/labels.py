"""The labels every series carries. Built here, in one place, so that later attribution
(container, job) is added once and reaches every metric."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gputop.core.model import Device, Process, Snapshot
from gputop.formats import dcgm

# Who holds a GPU (`owner_labels`) and which GPU instance a series is (`instance_labels`): the
# labels an alert rule aggregates away to keep one series per GPU (`gputop.exporter.alert_rules`).
OWNER_LABELS = ("container", "hpc_job", "namespace", "pod")
MIG_LABELS = ("GPU_I_PROFILE", "GPU_I_ID")


def device_node_name(dev: Device) -> str:
    """Return the device file dcgm-exporter's ``device`` label names (nvidia0, …; Ascend:
    davinci0); empty for an AMD or Intel GPU, whose DRM card number the model does not hold."""
    if dev.vendor == "huawei":
        return f"davinci{dev.index}"
    if not dcgm.describes(dev):
        return ""
    return f"nvidia{dev.index}"


def node_labels(snap: Snapshot, hostname_labels: tuple[str, ...]) -> dict[str, str]:
    return {name: snap.host for name in hostname_labels}


def device_labels(snap: Snapshot, dev: Device, hostname_labels: tuple[str, ...],
                  label_fields: Sequence[dcgm.Metric] = ()) -> dict[str, str]:
    """dcgm-exporter's labels for one GPU, in its order: identity, node, then the counters
    file's label rows sorted by name (``DCGM_FI_DRIVER_VERSION`` by default), each left out
    where the device has no value for it (and on a device DCGM's names do not describe). An
    identity label a device lacks is empty, which PromQL treats as absent."""
    labels = {
        "gpu": str(dev.index),
        "UUID": dev.uuid or "",
        "pci_bus_id": dev.pci_bus_id or "",
        "device": device_node_name(dev),
        "modelName": dev.name or "",
    }
    labels.update(node_labels(snap, hostname_labels))
    if not dcgm.describes(dev):
        return labels  # no DCGM_FI_* label rows on an AMD or Intel GPU either
    for metric in sorted(label_fields, key=lambda m: m.name):
        value = dcgm.value(metric.field, snap, dev)
        if value is not None:
            labels[metric.name] = value if isinstance(value, str) else f"{value:g}"
    return labels


def instance_labels(labels: dict[str, str], profile: str | None,
                    gpu_instance_id: int) -> dict[str, str]:
    """A GPU's labels with dcgm-exporter's MIG pair after modelName (its template's order):
    GPU_I_PROFILE as nvidia-smi names the profile ("3g.40gb"), GPU_I_ID the GPU instance id."""
    out: dict[str, str] = {}
    for key, value in labels.items():
        out[key] = value
        if key == "modelName":
            out["GPU_I_PROFILE"] = profile or ""
            out["GPU_I_ID"] = str(gpu_instance_id)
    return out


def owner_labels(processes: Iterable[Process]) -> list[dict[str, str]]:
    """The label sets a GPU's (or a GPU instance's) series carry for who holds it, one series per
    set, as dcgm-exporter's transforms label them: its Kubernetes transform puts ``pod``,
    ``namespace`` and ``container`` on the series of a GPU a pod holds (one pod per GPU: where
    two share it, dcgm-exporter takes the last the kubelet lists, gputop the one holding the most
    memory there); its HPC transform then copies the series once per Slurm job on the GPU, with
    ``hpc_job``. A GPU nobody holds gets none of these labels (not empty ones). Keys come sorted,
    as dcgm-exporter renders its attributes."""
    procs = list(processes)
    pods: dict[tuple[str, str, str], float] = {}
    for p in procs:
        c = p.container
        if c is not None and c.pod:
            key = (c.pod, c.pod_namespace or "", c.label or "")
            pods[key] = pods.get(key, 0.0) + (p.gpu_memory_mib or 0.0)
    base: dict[str, str] = {}
    if pods:
        pod, namespace, container = min(pods, key=lambda k: (-pods[k], k))
        base = {"container": container, "namespace": namespace, "pod": pod}
    jobs = sorted({p.job.id for p in procs if p.job is not None},
                  key=lambda j: (not j.isdigit(), int(j) if j.isdigit() else 0, j))
    if not jobs:
        return [base]
    return [dict(sorted({**base, "hpc_job": job}.items())) for job in jobs]


def process_labels(base: dict[str, str], proc: Process) -> dict[str, str]:
    """A process's series: its GPU's labels plus who runs it, with the names dcgm-exporter gives
    the owner of a GPU under Kubernetes (``pod``, ``namespace``, ``container``) and Slurm
    (``hpc_job``). Empty where the process has none, which PromQL treats as absent."""
    c, job = proc.container, proc.job
    labels = dict(base)
    labels["pod"] = (c.pod or "") if c else ""
    labels["namespace"] = (c.pod_namespace or "") if c else ""
    labels["container"] = (c.label or "") if c else ""
    labels["hpc_job"] = job.id if job else ""
    labels["pid"] = str(proc.pid)
    labels["user"] = proc.user or ""
    labels["name"] = proc.name or ""
    return labels
