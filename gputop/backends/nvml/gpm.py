"""GPU Performance Monitoring (GPM, Hopper and newer): how busy the SMs and links really are.

GPM metrics are rates between two samples. Each stream keeps two samples allocated once and
ping-pongs them: every read takes a fresh sample into the spare buffer and asks for the metrics
between it and the previous one. Samples closer than ``MIN_INTERVAL_S`` are noise, so a tick that
comes sooner reuses the last result (the older sample stays the baseline).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from gputop.backends.instances import combine
from gputop.core.model import Saturation

MIN_INTERVAL_S = 0.1

# Saturation field -> NVML_GPM_METRIC_* name. Percentages first, then MiB/s rates.
PCT_METRICS: tuple[tuple[str, str], ...] = (
    ("gr_engine_active_pct", "NVML_GPM_METRIC_GRAPHICS_UTIL"),
    ("sm_active_pct", "NVML_GPM_METRIC_SM_UTIL"),
    ("sm_occupancy_pct", "NVML_GPM_METRIC_SM_OCCUPANCY"),
    ("tensor_active_pct", "NVML_GPM_METRIC_ANY_TENSOR_UTIL"),
    ("dram_bw_pct", "NVML_GPM_METRIC_DRAM_BW_UTIL"),
    ("fp16_pct", "NVML_GPM_METRIC_FP16_UTIL"),
    ("fp32_pct", "NVML_GPM_METRIC_FP32_UTIL"),
    ("fp64_pct", "NVML_GPM_METRIC_FP64_UTIL"),
)
RATE_METRICS: tuple[tuple[str, str], ...] = (
    ("pcie_tx_mibps", "NVML_GPM_METRIC_PCIE_TX_PER_SEC"),
    ("pcie_rx_mibps", "NVML_GPM_METRIC_PCIE_RX_PER_SEC"),
    ("nvlink_tx_mibps", "NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC"),
    ("nvlink_rx_mibps", "NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC"),
)
METRICS = PCT_METRICS + RATE_METRICS

NO_SATURATION = Saturation()


def _code(nv: Any, name: str) -> int:
    return getattr(nv, name)


def is_supported(nv: Any, handle: Any) -> bool:
    """GPM on this device? Old drivers/bindings, pre-Hopper parts and struct version
    mismatches all mean no."""
    query = getattr(nv, "nvmlGpmQueryDeviceSupport", None)
    if query is None:
        return False
    try:
        return bool(query(handle).isSupportedDevice)
    except nv.NVMLError as exc:
        if exc.value == _code(nv, "NVML_ERROR_GPU_IS_LOST"):
            raise
        return False  # NOT_SUPPORTED, FUNCTION_NOT_FOUND, ARGUMENT_VERSION_MISMATCH...


class GpmStream:
    """Two ping-ponged samples of one GPU (or one MIG GPU instance)."""

    def __init__(self, nv: Any, handle: Any, gi: int | None = None) -> None:
        self.nv = nv
        self.handle = handle
        self.gi = gi
        self.prev = nv.nvmlGpmSampleAlloc()
        self.cur = nv.nvmlGpmSampleAlloc()
        self.prev_t: float | None = None
        self.last: dict[str, float | None] | None = None
        request = nv.c_nvmlGpmMetricsGet_t()
        request.version = nv.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(METRICS)
        for i, (_, name) in enumerate(METRICS):
            request.metrics[i].metricId = _code(nv, name)
        self.request = request

    def _take(self, sample: Any) -> None:
        if self.gi is None:
            self.nv.nvmlGpmSampleGet(self.handle, sample)
        else:
            self.nv.nvmlGpmMigSampleGet(self.handle, self.gi, sample)

    def baseline(self, now: float) -> None:
        self._take(self.prev)
        self.prev_t = now

    def due_in(self, now: float) -> float:
        """Seconds until a new reading is possible (0: now)."""
        if self.prev_t is None:
            return 0.0
        return max(0.0, MIN_INTERVAL_S - (now - self.prev_t))

    def read(self, now: float) -> dict[str, float | None] | None:
        if self.prev_t is None:
            self.baseline(now)
            return self.last
        if now - self.prev_t < MIN_INTERVAL_S:
            return self.last
        self._take(self.cur)
        request = self.request
        request.sample1 = self.prev
        request.sample2 = self.cur
        self.nv.nvmlGpmMetricsGet(request)
        self.prev, self.cur = self.cur, self.prev
        self.prev_t = now
        ok = self.nv.NVML_SUCCESS
        out: dict[str, float | None] = {}
        metrics = request.metrics
        for i, (key, _) in enumerate(METRICS):
            m = metrics[i]
            value = m.value
            # each metric carries its own return code: one unsupported never hides the others
            out[key] = None if m.nvmlReturn != ok or math.isnan(value) else float(value)
        self.last = out
        return out

    def free(self) -> None:
        for sample in (self.prev, self.cur):
            try:
                self.nv.nvmlGpmSampleFree(sample)
            except Exception:  # noqa: BLE001 - freeing during shutdown: nothing to do about it
                pass


class DeviceGpm:
    """GPM for one device: a device-wide stream, or one stream per MIG GPU instance."""

    def __init__(self, nv: Any, handle: Any, sleep: Callable[[float], None],
                 gpu_instances: Callable[[], list[tuple[int, float]]]) -> None:
        self.nv = nv
        self.handle = handle
        self.sleep = sleep
        # MIG: (GPU instance id, its SMs) of the instances the backend found (nvml/mig.py)
        self.gpu_instances = gpu_instances
        self.device_stream: GpmStream | None = None
        self.mig_streams: list[tuple[GpmStream, float]] | None = None
        self.mig: bool | None = None
        self.by_gi: dict[int, Saturation] = {}  # MIG: the last reading of each GPU instance

    def close(self) -> None:
        if self.device_stream is not None:
            self.device_stream.free()
        for stream, _ in self.mig_streams or ():
            stream.free()
        self.device_stream = None
        self.mig_streams = None

    def _streams(self, mig: bool) -> list[tuple[GpmStream, float]]:
        if mig != self.mig:
            self.close()
            self.mig = mig
        if not mig:
            if self.device_stream is None:
                self.device_stream = GpmStream(self.nv, self.handle)
            return [(self.device_stream, 1.0)]
        if self.mig_streams is None:
            self.mig_streams = [(GpmStream(self.nv, self.handle, gi), sms)
                                for gi, sms in self.gpu_instances()]
        return self.mig_streams

    def prime(self, now: float, mig: bool) -> None:
        """Take the baseline sample(s) now, so that the first reading need not wait long."""
        for stream, _ in self._streams(mig):
            stream.baseline(now)

    def saturation(self, now: Callable[[], float], mig: bool) -> Saturation:
        streams = self._streams(mig)
        if not streams:
            return NO_SATURATION
        t = now()
        if all(s.last is None for s, _ in streams):
            # First reading: the baseline was just taken; wait out the minimum interval once
            # rather than show nothing.
            for s, _ in streams:
                if s.prev_t is None:
                    s.baseline(t)
            wait = max(s.due_in(t) for s, _ in streams)
            if wait > 0:
                self.sleep(wait)
                t = now()
        parts = []
        by_gi = {}
        for stream, weight in streams:
            values = stream.read(t)
            if values is not None:
                parts.append((values, weight))
                if stream.gi is not None:
                    by_gi[stream.gi] = Saturation(source="gpm", **values)
        self.by_gi = by_gi
        if not parts:
            return NO_SATURATION
        values = parts[0][0] if len(parts) == 1 and not mig else combine(parts)
        return Saturation(source="gpm", **values)
