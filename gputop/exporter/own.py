"""gputop's own metrics (``gputop_…``): what dcgm-exporter has no name for, on every backend.
Pure: snapshot in, metric families out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from prometheus_client.core import Metric

from gputop.analysis.accounting import Account, JobLedger
from gputop.analysis.mig import instance_of
from gputop.core import clock_events
from gputop.core.model import DEVICE_STATUSES, Device, Snapshot
from gputop.core.units import HZ_PER_MHZ, MIB
from gputop.exporter.labels import instance_labels, node_labels, process_labels
from gputop.exporter.node_label import DEFAULT_HOSTNAME_LABEL, HOSTNAME_LABELS
from gputop.formats import dcgm

DEFAULT_TOP_PROCESSES = 10

# Family names other code reads back (the generated alert rules, `gputop.exporter.alert_rules`).
DEVICE_STATUS = "gputop_device_status"
DATA_AGE = "gputop_device_data_age_seconds"
TEMPERATURE = "gputop_temperature_celsius"
CLOCK = "gputop_clock_hertz"
HINT = "gputop_hint"
PROCESS_MEMORY = "gputop_process_gpu_memory_bytes"
PROCESS_SM = "gputop_process_sm_ratio"
IDLE_SECONDS = "gputop_idle_seconds_total"
IDLE_ENERGY = "gputop_idle_energy_joules_total"
# The job accounting families (docs/prometheus.md), which gputop.report.prometheus reads back.
JOB_GPU_SECONDS = "gputop_job_gpu_seconds_total"
JOB_ENERGY = "gputop_job_energy_joules_total"
JOB_SM_ACTIVE = "gputop_job_sm_active_seconds_total"
JOB_SM_MEASURED = "gputop_job_sm_measured_seconds_total"
JOB_FIRST_SEEN = "gputop_job_first_seen_timestamp_seconds"
JOB_LAST_SEEN = "gputop_job_last_seen_timestamp_seconds"
JOB_GPUS = "gputop_job_gpus"
JOB_MEMORY = "gputop_job_memory_used_bytes"
JOB_GPUS_PEAK = "gputop_job_gpus_peak"
JOB_MEMORY_PEAK = "gputop_job_memory_peak_bytes"
EXPORTER_START = "gputop_exporter_start_timestamp_seconds"
# The families `gputop report --prometheus` reads over a whole range, which the recording rules
# of `gputop exporter --recording-rules` have Prometheus copy every COPY_INTERVAL_S under
# ``copy_of(family)``: over a week of 15 s scrapes the report reads the copies, not every sample
# (gputop.report.prometheus; docs/waste.md, "Over Prometheus"). The interval is well within the
# day the exporter keeps an ended job's series, so a copy holds every job's final figures.
COPIED = (JOB_GPU_SECONDS, IDLE_SECONDS, JOB_ENERGY, IDLE_ENERGY, JOB_SM_ACTIVE, JOB_SM_MEASURED,
          JOB_FIRST_SEEN, JOB_LAST_SEEN, JOB_MEMORY_PEAK, JOB_GPUS_PEAK, EXPORTER_START)
COPY_INTERVAL_S = 3600


def copy_of(family: str) -> str:
    """Name the recorded hourly copy of ``family`` (Prometheus's level:metric:operation form)."""
    return f"gputop:{family.removeprefix('gputop_')}:hourly"


# The labels of every per-account series, besides the node's (account_labels).
ACCOUNT_LABELS = ("user", "hpc_job", "workload", "inferred")


@dataclass(frozen=True)
class Options:
    hostname_labels: tuple[str, ...] = HOSTNAME_LABELS[DEFAULT_HOSTNAME_LABEL]
    # Series per GPU are bounded: the N processes holding the most memory.
    top_processes: int = DEFAULT_TOP_PROCESSES
    # The DCGM fields served (a counters file's, else dcgm.DEFAULT); its label rows label every
    # series of a GPU, gputop's own included.
    counters: tuple[dcgm.Metric, ...] = dcgm.DEFAULT

    @property
    def label_fields(self) -> tuple[dcgm.Metric, ...]:
        return tuple(m for m in self.counters if m.label)


def top_processes(dev: Device, n: int):
    ranked = sorted(dev.processes, key=lambda p: (-(p.gpu_memory_mib or 0.0), p.pid))
    return ranked[:n]


def families(snap: Snapshot, opts: Options, version: str,
             gpu_labels: Mapping[int, dict[str, str]], jobs: JobLedger | None = None) -> list[Metric]:
    """gputop's own families; ``gpu_labels`` holds each device's labels by index, built once
    per snapshot for these and the DCGM families alike; ``jobs``: the exporter's idle ledger's
    running totals per (job, user) (``WasteLedger.accounts``), None where it keeps none."""
    host = node_labels(snap, opts.hostname_labels)
    info = Metric("gputop_info", "gputop exporter: version and the backend it reads.", "gauge")
    info.add_sample("gputop_info", {**host, "version": version, "backend": snap.backend}, 1.0)
    stamp = Metric("gputop_snapshot_timestamp_seconds",
                   "When the served snapshot was sampled (Unix time).", "gauge")
    stamp.add_sample("gputop_snapshot_timestamp_seconds", host, snap.time)
    status = Metric(DEVICE_STATUS,
                    "1 for the device's status (ok, lost, error), 0 for the others.", "gauge")
    age = Metric(DATA_AGE,
                 "How old the device's readings are, where the backend serves cached readings "
                 "(npu-smi).", "gauge")
    total = Metric("gputop_memory_total_bytes", "Device memory size.", "gauge")
    limit = Metric("gputop_power_limit_watts", "Enforced power limit.", "gauge")
    events = Metric("gputop_clock_event_active",
                    "1 while the clock-event (throttle) reason holds, 0 when not.", "gauge")
    source = Metric("gputop_saturation_source",
                    "Who measured the saturation figures (gpm, sim): 1 for the source.", "gauge")
    busy = Metric("gputop_utilization_ratio",
                  "The device's busy share, 0-1, as its driver counts it: NVML's utilization.gpu,"
                  " amdgpu's gpu_busy_percent, npu-smi's AICore %, i915/xe GT busy time.", "gauge")
    used = Metric("gputop_memory_used_bytes", "Device memory in use (VRAM; HBM or DDR on Ascend).",
                  "gauge")
    draw = Metric("gputop_power_draw_watts", "Power draw.", "gauge")
    energy = Metric("gputop_energy_joules_total",
                    "Energy the device has used since its driver's counter started.", "counter")
    temps = Metric(TEMPERATURE,
                   "Temperature by sensor: gpu (AMD: edge), hotspot (junction), memory.", "gauge")
    clocks = Metric(CLOCK,
                    "Current clock by domain: sm (AMD: sclk; Intel: the render GT), memory, video.",
                    "gauge")
    proc_mem = Metric(PROCESS_MEMORY,
                      "GPU memory a process holds (top processes per GPU by memory).", "gauge")
    proc_sm = Metric(PROCESS_SM,
                     "A process's share of SM time, 0-1 (top processes per GPU by memory).",
                     "gauge")
    for dev in snap.devices:
        labels = gpu_labels[dev.index]
        for name in DEVICE_STATUSES:
            status.add_sample(status.name, {**labels, "vendor": dev.vendor or "", "status": name},
                              1.0 if dev.status == name else 0.0)
        _headline(dev, labels, busy, used, draw, energy, temps, clocks)
        if dev.data_age_s is not None:
            age.add_sample(age.name, labels, dev.data_age_s)
        if dev.memory_total_mib is not None:
            total.add_sample(total.name, labels, dev.memory_total_mib * MIB)
        if dev.power_limit_w is not None:
            limit.add_sample(limit.name, labels, dev.power_limit_w)
        if dev.clock_event_reasons is not None:
            held = set(dev.clock_event_reasons)
            for reason in clock_events.REASONS:
                events.add_sample(events.name, {**labels, "reason": reason},
                                  1.0 if reason in held else 0.0)
        if dev.saturation.source is not None:
            source.add_sample(source.name, {**labels, "source": dev.saturation.source}, 1.0)
        for proc in top_processes(dev, opts.top_processes):
            plabels = process_labels(labels, proc)
            if proc.gpu_instance_id is not None:  # under MIG: its instance, as dcgm-exporter
                inst = instance_of(dev, proc.gpu_instance_id, proc.compute_instance_id or 0)
                plabels = instance_labels(plabels, inst.profile if inst else None,
                                          proc.gpu_instance_id)
            if proc.gpu_memory_mib is not None:
                proc_mem.add_sample(proc_mem.name, plabels, proc.gpu_memory_mib * MIB)
            if proc.sm_pct is not None:
                proc_sm.add_sample(proc_sm.name, plabels, proc.sm_pct / 100.0)
    hint = Metric(HINT, "An active hint: 1 per (gpu, code); gpu is empty for the node.",
                  "gauge")
    for h in snap.hints:
        hint.add_sample(hint.name, {**host, "gpu": "" if h.device is None else str(h.device),
                                    "code": h.code, "severity": h.severity}, 1.0)
    return [info, stamp, status, age, total, limit, busy, used, draw, energy, temps, clocks,
            events, source, hint, proc_mem, proc_sm,
            *idle_families(host, jobs.accounts.values() if jobs is not None else ()),
            *job_families(host, jobs)]


def account_labels(host: dict[str, str], acct: Account) -> dict[str, str]:
    """The labels of an account's series: the node's, then ``ACCOUNT_LABELS``."""
    values = (acct.user or "", acct.hpc_job or "", acct.label, "true" if acct.inferred else "false")
    return {**host, **dict(zip(ACCOUNT_LABELS, values, strict=True))}


def idle_families(host: dict[str, str], idle: Iterable[Account]) -> list[Metric]:
    """The idle-allocated counters, one series per (job, user) pair: each idle second is in one
    series only, so ``sum by (user)`` and ``sum by (hpc_job)`` count it once (docs/waste.md)."""
    seconds = Metric(IDLE_SECONDS,
                     "Seconds a job's processes held a GPU (or MIG instance) idle: memory held, "
                     "SM activity at or below the idle threshold.", "counter")
    joules = Metric(IDLE_ENERGY,
                    "The GPU energy spent while held idle, the job's share by memory.", "counter")
    for g in idle:
        labels = account_labels(host, g)
        seconds.add_sample(seconds.name, labels, g.idle.seconds)
        energy_j = g.idle.energy
        if energy_j is not None:
            joules.add_sample(joules.name, labels, energy_j)
    return [seconds, joules]


def job_families(host: dict[str, str], jobs: JobLedger | None) -> list[Metric]:
    """The job accounting families, one series per (job, user) as the idle counters: what each
    held of this node's GPUs, so that ``increase()`` over any range gives a job's GPU time,
    energy and mean SM activity there (docs/prometheus.md). The counters, the seen times and
    the peaks cover every account the ledger keeps (ended ones for a day, flat: a reader at
    steps under a day apart sees every job's final figures); what is held now, the present
    accounts only. With them, when the ledger began counting (one series for the node): a newer
    value says every counter started over."""
    gpu_s = Metric(JOB_GPU_SECONDS, "GPU seconds a job's processes held (a MIG instance counts "
                   "its share of the GPU's memory), busy or idle.", "counter")
    energy = Metric(JOB_ENERGY, "The GPU energy spent while a job held it, the job's share by "
                    "memory.", "counter")
    sm_active = Metric(JOB_SM_ACTIVE, "A job's GPU seconds times the SM activity measured over "
                       "them, / 100: over a range, its increase divided by "
                       f"{JOB_SM_MEASURED}'s is the mean SM activity.", "counter")
    sm_measured = Metric(JOB_SM_MEASURED, "A job's GPU seconds whose SM activity was measured "
                         "(GPM's SM active, else utilization).", "counter")
    first = Metric(JOB_FIRST_SEEN, "When the exporter first saw the job's processes (Unix time).",
                   "gauge")
    last = Metric(JOB_LAST_SEEN, "When the exporter last saw the job's processes (Unix time).",
                  "gauge")
    gpus = Metric(JOB_GPUS, "GPUs (and MIG instances) the job's processes hold now.", "gauge")
    memory = Metric(JOB_MEMORY, "GPU memory the job's processes hold now.", "gauge")
    gpus_peak = Metric(JOB_GPUS_PEAK, "The most GPUs (and MIG instances) the job's processes "
                       "held at once since the exporter first saw them.", "gauge")
    memory_peak = Metric(JOB_MEMORY_PEAK, "The most GPU memory the job's processes held "
                         "together since the exporter first saw them.", "gauge")
    start = Metric(EXPORTER_START, "When the exporter began counting jobs (its first sample, "
                   "Unix time): its job and idle counters started at 0 then.", "gauge")
    if jobs is not None:
        if jobs.since is not None:
            start.add_sample(start.name, host, jobs.since)
        for acct in jobs.accounts.values():
            labels = account_labels(host, acct)
            gpu_s.add_sample(gpu_s.name, labels, acct.used.seconds)
            used_j = acct.used.energy
            if used_j is not None:
                energy.add_sample(energy.name, labels, used_j)
            sm_active.add_sample(sm_active.name, labels, acct.sm_busy_s)
            sm_measured.add_sample(sm_measured.name, labels, acct.sm_measured_s)
            first.add_sample(first.name, labels, acct.first_seen)
            last.add_sample(last.name, labels, acct.last_seen)
            gpus_peak.add_sample(gpus_peak.name, labels, float(acct.peak_gpus))
            memory_peak.add_sample(memory_peak.name, labels, acct.peak_memory_mib * MIB)
        for acct in jobs.active():
            labels = account_labels(host, acct)
            gpus.add_sample(gpus.name, labels, float(acct.gpus_now))
            memory.add_sample(memory.name, labels, acct.memory_mib * MIB)
    return [gpu_s, energy, sm_active, sm_measured, first, last, gpus, memory, gpus_peak,
            memory_peak, start]


# The sensors and clock domains served, by label value, in that order: (label, Device field).
SENSORS: tuple[tuple[str, str], ...] = (
    ("gpu", "temperature_c"), ("hotspot", "temperature_hotspot_c"),
    ("memory", "temperature_memory_c"))
CLOCKS: tuple[tuple[str, str], ...] = (
    ("sm", "clock_sm_mhz"), ("memory", "clock_mem_mhz"), ("video", "clock_video_mhz"))

def _headline(dev: Device, labels: dict[str, str], busy: Metric, used: Metric, draw: Metric,
              energy: Metric, temps: Metric, clocks: Metric) -> None:
    """Add the device's headline figures under gputop's names, on every vendor: the one set a
    mixed AMD/Intel/NVIDIA fleet's dashboards can query alike (DCGM's names stop at NVIDIA and
    Ascend). A figure the device does not report has no sample, never a 0."""
    def add(family: Metric, value: float | None, scale: float = 1.0,
            extra: dict[str, str] | None = None) -> None:
        if value is not None:
            family.add_sample(family.name, {**labels, **(extra or {})}, value * scale)

    add(busy, dev.utilization_gpu_pct, 0.01)
    add(used, dev.memory_used_mib, MIB)
    add(draw, dev.power_draw_w)
    add(energy, dev.energy_j)
    for sensor, field in SENSORS:
        add(temps, getattr(dev, field), extra={"sensor": sensor})
    for domain, field in CLOCKS:
        add(clocks, getattr(dev, field), HZ_PER_MHZ, extra={"clock": domain})
