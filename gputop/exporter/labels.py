"""The labels every series carries. Built here, in one place, so that later attribution
(container, job) is added once and reaches every metric."""

from __future__ import annotations

from gputop.core.model import Device, Process, Snapshot

# dcgm-exporter called the node label "Hostname" and moved to "hostname"; both by default so
# that dashboards of either age keep working.
HOSTNAME_LABELS = {"both": ("Hostname", "hostname"), "Hostname": ("Hostname",),
                   "hostname": ("hostname",)}


def device_node_name(dev: Device) -> str:
    """The device file dcgm-exporter's ``device`` label names (nvidia0, …; Ascend: davinci0)."""
    if dev.vendor == "huawei":
        return f"davinci{dev.index}"
    return f"nvidia{dev.index}"


def node_labels(snap: Snapshot, hostname_labels: tuple[str, ...]) -> dict[str, str]:
    return {name: snap.host for name in hostname_labels}


def device_labels(snap: Snapshot, dev: Device, hostname_labels: tuple[str, ...]) -> dict[str, str]:
    """dcgm-exporter's labels for one GPU. A label a device lacks is empty, which PromQL treats
    as absent."""
    labels = {
        "gpu": str(dev.index),
        "UUID": dev.uuid or "",
        "pci_bus_id": dev.pci_bus_id or "",
        "device": device_node_name(dev),
        "modelName": dev.name or "",
    }
    labels.update(node_labels(snap, hostname_labels))
    labels["DCGM_FI_DRIVER_VERSION"] = snap.driver_version or ""
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
