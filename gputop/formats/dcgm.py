"""dcgm-exporter's metrics, read off the model: name, type, help text and unit as dcgm-exporter
publishes them (its ``etc/default-counters.csv`` and ``dcp-metrics-included.csv``), so that its
Grafana dashboard and users' PromQL read gputop unchanged. Pure: no I/O.

A reading the device does not report (None) gives no sample at all, never a 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gputop.core.model import Device, MigInstance
from gputop.core.units import MB_PER_MIB, MIB


@dataclass(frozen=True)
class DcgmMetric:
    """One metric and where it lives in the model: ``attr`` of the device (or of its saturation
    when ``sat``), times ``scale``; ``custom`` for the one that combines two readings."""

    name: str
    type: str  # "gauge" | "counter"
    help: str
    attr: str | None = None
    scale: float = 1.0
    sat: bool = False
    custom: Callable[[Device], float | None] | None = None

    @property
    def field(self) -> str:
        """Return the model field read: a declared one (tests/unit/formats/test_named_fields.py)."""
        if self.attr is None:
            raise TypeError(f"{self.name} combines readings: it has no one field")
        return self.attr

    def read(self, dev: Device) -> float | None:
        if self.custom is not None:
            return self.custom(dev)
        value = getattr(dev.saturation if self.sat else dev, self.field)
        return None if value is None else float(value) * self.scale


def _nvlink_total(dev: Device) -> float | None:
    # DCGM's field 449 is the current NVLink rate over all links (MB/s), whatever its type says.
    tx, rx = dev.saturation.nvlink_tx_mibps, dev.saturation.nvlink_rx_mibps
    if tx is None or rx is None:
        return None
    return (tx + rx) * MB_PER_MIB


def _g(name: str, help: str, attr: str, scale: float = 1.0) -> DcgmMetric:
    return DcgmMetric(name, "gauge", help, attr, scale)


def _c(name: str, help: str, attr: str, scale: float = 1.0) -> DcgmMetric:
    return DcgmMetric(name, "counter", help, attr, scale)


def _prof(name: str, help: str, attr: str, scale: float = 0.01) -> DcgmMetric:
    """GPM figures: percent in the model, ratios 0–1 in DCGM's profiling fields."""
    return DcgmMetric(name, "gauge", help, attr, scale, sat=True)


METRICS: tuple[DcgmMetric, ...] = (
    _g("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", "clock_sm_mhz"),
    _g("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", "clock_mem_mhz"),
    _g("DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C).", "temperature_memory_c"),
    _g("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "temperature_c"),
    _g("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "power_draw_w"),
    _c("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", "energy_j", 1000.0),
    _c("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries.", "pcie_replay_count"),
    _g("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "utilization_gpu_pct"),
    _g("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", "utilization_memory_pct"),
    _g("DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %).", "utilization_encoder_pct"),
    _g("DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %).", "utilization_decoder_pct"),
    _g("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", "xid_last"),
    _g("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "memory_free_mib"),
    _g("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "memory_used_mib"),
    _g("DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB).", "memory_reserved_mib"),
    DcgmMetric("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
               "Total number of NVLink bandwidth counters for all lanes.", custom=_nvlink_total),
    _c("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for uncorrectable errors", "remapped_rows_uncorrectable"),
    _c("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for correctable errors", "remapped_rows_correctable"),
    _g("DCGM_FI_DEV_ROW_REMAP_FAILURE", "Whether remapping of rows has failed",
       "remapped_rows_failed"),
    _prof("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", "gr_engine_active_pct"),
    _prof("DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned.", "sm_active_pct"),
    _prof("DCGM_FI_PROF_SM_OCCUPANCY", "The ratio of number of warps resident on an SM.", "sm_occupancy_pct"),
    _prof("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", "tensor_active_pct"),
    _prof("DCGM_FI_PROF_DRAM_ACTIVE", "Ratio of cycles the device memory interface is active sending or receiving data.", "dram_bw_pct"),
    _prof("DCGM_FI_PROF_PIPE_FP64_ACTIVE", "Ratio of cycles the fp64 pipes are active.", "fp64_pct"),
    _prof("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "Ratio of cycles the fp32 pipes are active.", "fp32_pct"),
    _prof("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "Ratio of cycles the fp16 pipes are active.", "fp16_pct"),
    _prof("DCGM_FI_PROF_PCIE_TX_BYTES", "The rate of data transmitted over the PCIe bus - including both protocol headers "
               "and data payloads - in bytes per second.", "pcie_tx_mibps", MIB),
    _prof("DCGM_FI_PROF_PCIE_RX_BYTES", "The rate of data received over the PCIe bus - including both protocol headers "
               "and data payloads - in bytes per second.", "pcie_rx_mibps", MIB),
)

BY_NAME = {m.name: m for m in METRICS}


# ---------------------------------------------------------------- MIG
#
# On a MIG GPU dcgm-exporter (its default "-d f") watches each GPU instance instead of the GPU:
# every series carries the parent's gpu/UUID/device/modelName labels plus GPU_I_PROFILE and
# GPU_I_ID, and no series is left for the parent itself. Framebuffer and profiling fields are the
# instance's own; DCGM has no utilization fields under MIG (dcgm-exporter issues #105, #430);
# the other device fields (clocks, temperature, power, …) are the parent's, repeated per instance.

NOT_UNDER_MIG = frozenset({"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL",
                           "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL"})


def _instance_free(inst: MigInstance) -> float | None:
    if inst.memory_total_mib is None or inst.memory_used_mib is None:
        return None
    return inst.memory_total_mib - inst.memory_used_mib


_INSTANCE_MEMORY: dict[str, Callable[[MigInstance], float | None]] = {
    "DCGM_FI_DEV_FB_USED": lambda inst: inst.memory_used_mib,
    "DCGM_FI_DEV_FB_FREE": _instance_free,
    "DCGM_FI_DEV_FB_RESERVED": lambda inst: None,  # not reported per instance
}


def read_instance(metric: DcgmMetric, dev: Device, inst: MigInstance) -> float | None:
    """``metric`` for one GPU instance of ``dev``, as dcgm-exporter reports it (None: no sample)."""
    if metric.name in NOT_UNDER_MIG:
        return None
    memory = _INSTANCE_MEMORY.get(metric.name)
    if memory is not None:
        value = memory(inst)
    elif metric.sat:
        value = getattr(inst.saturation, metric.field)
    else:
        return metric.read(dev)
    return None if value is None else float(value) * metric.scale


def gpu_instances(dev: Device) -> list[MigInstance]:
    """One MIG device per GPU instance (its first compute instance): DCGM watches GPU
    instances, whose memory and GPM its compute instances share."""
    seen: dict[int, MigInstance] = {}
    for inst in dev.mig_instances:
        seen.setdefault(inst.gpu_instance_id, inst)
    return list(seen.values())
