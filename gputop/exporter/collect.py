"""One snapshot → every metric family the exporter serves."""

from __future__ import annotations

from prometheus_client.core import Metric

from gputop.core.model import Snapshot
from gputop.exporter import own
from gputop.exporter.labels import device_labels, instance_labels
from gputop.formats import dcgm


def dcgm_families(snap: Snapshot, opts: own.Options) -> list[Metric]:
    out = [Metric(m.name, m.help, m.type) for m in dcgm.METRICS]
    for dev in snap.devices:
        labels = device_labels(snap, dev, opts.hostname_labels)
        if dev.mig_instances:  # the GPU instances stand in for the GPU, as in dcgm-exporter
            for inst in dcgm.gpu_instances(dev):
                ilabels = instance_labels(labels, inst.profile, inst.gpu_instance_id)
                for metric, family in zip(dcgm.METRICS, out):
                    value = dcgm.read_instance(metric, dev, inst)
                    if value is not None:
                        family.add_sample(metric.name, ilabels, value)
            continue
        for metric, family in zip(dcgm.METRICS, out):
            value = metric.read(dev)
            if value is not None:
                family.add_sample(metric.name, labels, value)
    return out


def families(snap: Snapshot, opts: own.Options, version: str) -> list[Metric]:
    return dcgm_families(snap, opts) + own.families(snap, opts, version)
