"""One snapshot → every metric family the exporter serves."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client.core import Metric

from gputop.analysis.accounting import JobLedger
from gputop.core.model import Snapshot
from gputop.exporter import own
from gputop.exporter.labels import device_labels, instance_labels, owner_labels
from gputop.formats import dcgm


def dcgm_families(snap: Snapshot, opts: own.Options,
                  gpu_labels: Mapping[int, dict[str, str]]) -> list[Metric]:
    """The counters' families in the counters' order, for the devices DCGM's names describe
    (``dcgm.describes``); a GPU's series carry its labels
    (``gpu_labels``, by index) and its owners' (one series per Slurm job, as dcgm-exporter's
    transforms copy them)."""
    numbers = [m for m in opts.counters if not m.label]
    out = [Metric(m.name, m.help, m.type) for m in numbers]
    for dev in snap.devices:
        if not dcgm.describes(dev):
            continue  # an AMD or Intel GPU: gputop's own families only
        labels = gpu_labels[dev.index]
        if dev.mig_instances:  # the GPU instances stand in for the GPU, as in dcgm-exporter
            for inst in dcgm.gpu_instances(dev):
                ilabels = instance_labels(labels, inst.profile, inst.gpu_instance_id)
                owners = owner_labels(p for p in dev.processes
                                      if p.gpu_instance_id == inst.gpu_instance_id)
                for metric, family in zip(numbers, out):
                    _add(family, metric, dcgm.value(metric.field, snap, dev, inst), ilabels,
                         owners)
            continue
        owners = owner_labels(dev.processes)
        for metric, family in zip(numbers, out):
            _add(family, metric, dcgm.value(metric.field, snap, dev), labels, owners)
    return out


def _add(family: Metric, metric: dcgm.Metric, value: dcgm.Value, labels: dict[str, str],
         owners: list[dict[str, str]]) -> None:
    if value is None or isinstance(value, str):
        return  # nothing read, or text (served only as a label)
    # dcgm-exporter's attributes come sorted by name after the labels: err_code and err_msg on
    # the Xid field, then the owners' container, hpc_job, namespace, pod
    extra = dcgm.xid_labels(int(value)) if metric.field.id == dcgm.XID_ERRORS else {}
    for owner in owners:
        family.add_sample(metric.name, {**labels, **dict(sorted({**owner, **extra}.items()))},
                          value)


def families(snap: Snapshot, opts: own.Options, version: str,
             jobs: JobLedger | None = None) -> list[Metric]:
    gpu_labels = {dev.index: device_labels(snap, dev, opts.hostname_labels, opts.label_fields)
                  for dev in snap.devices}
    return dcgm_families(snap, opts, gpu_labels) + own.families(snap, opts, version, gpu_labels, jobs)
