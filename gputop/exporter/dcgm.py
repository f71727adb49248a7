"""dcgm-exporter's metrics, read off the model: name, type, help text and unit as dcgm-exporter
publishes them (its ``etc/default-counters.csv`` and ``dcp-metrics-included.csv``), so that its
Grafana dashboard and users' PromQL read gputop unchanged. Pure: no I/O.

A reading the device does not report (None) gives no sample at all, never a 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gputop.model import Device

MIB = 1024 * 1024
MB_PER_MIB = MIB / 1e6


@dataclass(frozen=True)
class DcgmMetric:
    name: str
    type: str  # "gauge" | "counter"
    help: str
    read: Callable[[Device], float | None]


def _attr(name: str) -> Callable[[Device], float | None]:
    def read(dev: Device) -> float | None:
        value = getattr(dev, name)
        return None if value is None else float(value)

    return read


def _scaled(read: Callable[[Device], float | None], factor: float) -> Callable[[Device], float | None]:
    def scaled(dev: Device) -> float | None:
        value = read(dev)
        return None if value is None else value * factor

    return scaled


def _sat(name: str) -> Callable[[Device], float | None]:
    def read(dev: Device) -> float | None:
        value = getattr(dev.saturation, name)
        return None if value is None else float(value)

    return read


def _ratio(name: str) -> Callable[[Device], float | None]:
    """GPM reports percent; DCGM's profiling fields are ratios 0–1."""
    return _scaled(_sat(name), 0.01)


def _nvlink_total(dev: Device) -> float | None:
    # DCGM's field 449 is the current NVLink rate over all links (MB/s), whatever its type says.
    tx, rx = dev.saturation.nvlink_tx_mibps, dev.saturation.nvlink_rx_mibps
    if tx is None or rx is None:
        return None
    return (tx + rx) * MB_PER_MIB


def _row_remap_failure(dev: Device) -> float | None:
    failed = dev.remapped_rows_failed
    return None if failed is None else float(failed)


METRICS: tuple[DcgmMetric, ...] = (
    DcgmMetric("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).",
               _attr("clock_sm_mhz")),
    DcgmMetric("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).",
               _attr("clock_mem_mhz")),
    DcgmMetric("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).",
               _attr("temperature_memory_c")),
    DcgmMetric("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).",
               _attr("temperature_c")),
    DcgmMetric("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", _attr("power_draw_w")),
    DcgmMetric("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
               "Total energy consumption since boot (in mJ).", _scaled(_attr("energy_j"), 1000.0)),
    DcgmMetric("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.",
               _attr("pcie_replay_count")),
    DcgmMetric("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).",
               _attr("utilization_gpu_pct")),
    DcgmMetric("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).",
               _attr("utilization_memory_pct")),
    DcgmMetric("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).",
               _attr("utilization_encoder_pct")),
    DcgmMetric("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).",
               _attr("utilization_decoder_pct")),
    DcgmMetric("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.",
               _attr("xid_last")),
    DcgmMetric("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
               _attr("memory_free_mib")),
    DcgmMetric("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
               _attr("memory_used_mib")),
    DcgmMetric("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).",
               _attr("memory_reserved_mib")),
    DcgmMetric("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
               "Total number of NVLink bandwidth counters for all lanes.", _nvlink_total),
    DcgmMetric("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
               "Number of remapped rows for uncorrectable errors",
               _attr("remapped_rows_uncorrectable")),
    DcgmMetric("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
               "Number of remapped rows for correctable errors", _attr("remapped_rows_correctable")),
    DcgmMetric("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed",
               _row_remap_failure),
    DcgmMetric("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
               "Ratio of time the graphics engine is active.", _ratio("gr_engine_active_pct")),
    DcgmMetric("DCGM_FI_PROF_SM_ACTIVE", "gauge",
               "The ratio of cycles an SM has at least 1 warp assigned.", _ratio("sm_active_pct")),
    DcgmMetric("DCGM_FI_PROF_SM_OCCUPANCY", "gauge",
               "The ratio of number of warps resident on an SM.", _ratio("sm_occupancy_pct")),
    DcgmMetric("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
               "Ratio of cycles the tensor (HMMA) pipe is active.", _ratio("tensor_active_pct")),
    DcgmMetric("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
               "Ratio of cycles the device memory interface is active sending or receiving data.",
               _ratio("dram_bw_pct")),
    DcgmMetric("DCGM_FI_PROF_PIPE_FP64_ACTIVE", "gauge", "Ratio of cycles the fp64 pipes are active.",
               _ratio("fp64_pct")),
    DcgmMetric("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "gauge", "Ratio of cycles the fp32 pipes are active.",
               _ratio("fp32_pct")),
    DcgmMetric("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "gauge", "Ratio of cycles the fp16 pipes are active.",
               _ratio("fp16_pct")),
    DcgmMetric("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
               "The rate of data transmitted over the PCIe bus - including both protocol headers "
               "and data payloads - in bytes per second.", _scaled(_sat("pcie_tx_mibps"), MIB)),
    DcgmMetric("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
               "The rate of data received over the PCIe bus - including both protocol headers "
               "and data payloads - in bytes per second.", _scaled(_sat("pcie_rx_mibps"), MIB)),
)

BY_NAME = {m.name: m for m in METRICS}
