"""Synthetic devices and histories for the hint and saturation tests (no simulator, no GPU)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from gputop.core.model import Device, Process, Saturation, Snapshot

NOW = 1_763_769_600.0


def proc(pid: int = 4242, *, user: str = "alice", command: str = "python train.py",
         cpu: float | None = 50.0, mem: float = 40000.0, sm: float | None = 90.0,
         started: float | None = NOW - 3600) -> Process:
    return Process(pid=pid, user=user, name=command.split()[0], command=command,
                   gpu_memory_mib=mem, sm_pct=sm, cpu_pct=cpu, started=started)


def gpm(sm: float = 85.0, occ: float = 45.0, tensor: float = 55.0, dram: float = 30.0,
        source: str | None = "gpm") -> Saturation:
    return Saturation(source=source, sm_active_pct=sm, sm_occupancy_pct=occ,
                      tensor_active_pct=tensor, dram_bw_pct=dram, fp16_pct=40.0, fp32_pct=8.0,
                      fp64_pct=0.0, pcie_tx_mibps=90.0, pcie_rx_mibps=300.0,
                      nvlink_tx_mibps=20000.0, nvlink_rx_mibps=20000.0)


def device(index: int = 0, **kw) -> Device:
    base = Device(
        index=index, name="NVIDIA H100 80GB HBM3", vendor="nvidia", status="ok",
        memory_total_mib=81559.0, memory_used_mib=40000.0, utilization_gpu_pct=97.0,
        temperature_c=60.0, power_draw_w=600.0, power_limit_w=700.0,
        power_limit_default_w=700.0, clock_sm_mhz=1980.0, clock_sm_max_mhz=1980.0,
        clock_event_reasons=(), saturation=gpm(), processes=(proc(),),
    )
    return replace(base, **kw)


def history(n: int, make: Callable[[int], Sequence[Device]], dt: float = 1.0,
            end: float = NOW) -> list[Snapshot]:
    """n snapshots, oldest first, ``dt`` apart, ending at ``end``; make(i) gives tick i's devices."""
    return [Snapshot(host="node-a", time=end - (n - 1 - i) * dt, backend="nvml",
                     devices=tuple(make(i))) for i in range(n)]


def codes(hints, device_index: int | None = None) -> set[str]:
    return {h.code for h in hints if device_index is None or h.device == device_index}
