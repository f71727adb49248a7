"""Simulator scenarios: data files in gputop/scenarios/*.toml, loaded into plain dataclasses."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from gputop.backends.base import BackendError
from gputop.backends.sim.mig import Slot, place
from gputop.core import datafiles


@dataclass(frozen=True)
class Part:
    """A device model's fixed facts (public datasheet figures)."""

    name: str
    vendor: str
    memory_total_mib: float
    tdp_w: float
    power_min_w: float
    idle_w: float
    clock_sm_max_mhz: float
    clock_mem_mhz: float
    pcie_gen: int
    pcie_width: int
    fan: bool = False
    # Ampere and later remap memory rows after ECC errors; earlier parts retire pages instead.
    remaps_rows: bool = True
    # NVML's GPM (SM activity, occupancy, tensor and DRAM activity) needs Hopper or newer: the
    # simulator reports saturation only for parts that have it (#27: a V100 showed it).
    gpm: bool = True
    # MIG came with the A100 and H100: a V100 has no MIG mode (NVML: not supported, None).
    mig: bool = True
    # The PCI ids as NVML packs them (device id << 16 | vendor id), where the part's backend
    # reports them (the sysfs backends read uevent's PCI_ID); None where it is not simulated.
    pci_device_id: int | None = None
    pci_sub_device_id: int | None = None
    vbios_version: str | None = None  # as the part's backend reads it (NVIDIA's: a constant)


# Memory totals are what the driver reports (the fixtures show 81559 MiB for an H100 80GB HBM3).
PARTS: dict[str, Part] = {
    "h100-sxm": Part("NVIDIA H100 80GB HBM3", "nvidia", 81559, 700, 200, 70, 1980, 2619, 5, 16),
    "a100-sxm4-80gb": Part("NVIDIA A100-SXM4-80GB", "nvidia", 81920, 400, 100, 55, 1410, 1593, 4, 16,
                           gpm=False),
    "v100-sxm3-32gb": Part("Tesla V100-SXM3-32GB", "nvidia", 32768, 350, 100, 45, 1597, 958, 3, 16,
                           remaps_rows=False, gpm=False, mig=False),
    # As npu-smi shows a 910B3 (the npu-smi backend names it "Ascend 910B3"): 65536 MB of HBM,
    # about 90 W idle (real tables read 82-99 W on idle 910B1/B2C/B3/B4), AICore 1800 MHz
    # (`info -t common` on a 910B1). The 400 W ceiling is the public OAM figure, not a capture.
    "ascend-910b": Part("Ascend 910B3", "huawei", 65536, 400, 100, 90, 1800, 1600, 4, 16),
    # An MI300X as amdgpu's sysfs shows it. From the real `amd-smi static --json` of 8 MI300X
    # (tests/fixtures/amd/amd-smi-static-json_8xMI300X-…): board product_name "AMD Instinct
    # MI300X OAM" (what sysfs' product_name holds, the same FRU field), 196592 MB of VRAM (192 GB
    # HBM3), power cap 0-750 W (750 W, AMD's published TBP), PCIe Gen 5 (32 GT/s) x16,
    # device and subsystem 0x74a1, IFWI part number 113-M3000108-103 (sysfs' vbios_version).
    # Peak engine clock 2100 MHz (the data sheet; rocminfo's "Max Clock Freq. (MHz): 2100" on an
    # MI300X, ROCm/legacy-rocm-build#4414); memory clock 1300 MHz: the capture's 5325 GB/s over
    # 8192 bits is 5.2 Gb/s a pin, HBM3's clock a quarter of it (rocm-smi's peak MCLK on MI300's
    # HBM3, ROCm/rocm_smi_lib#209). Idle power is a model parameter, not a reading: the same
    # tenth of the TBP as the simulated H100's 70 of 700 W. No GPM, no MIG: amdgpu has neither.
    "mi300x": Part("AMD Instinct MI300X OAM", "amd", 196592, 750, 0, 75, 2100, 1300, 5, 16,
                   remaps_rows=False, gpm=False, mig=False, pci_device_id=0x74A11002,
                   pci_sub_device_id=0x74A11002, vbios_version="113-M3000108-103"),
    # An Intel Data Center GPU Max 1550 as i915's sysfs shows it: named by its PCI id, 0x0BD5
    # ("Intel(R) Data Center GPU Max 1550" in Intel's compute-runtime device table), as the
    # intel backend names every card (intel/values.product_name; a test holds them equal). Intel's figures (ark.intel.com 232873, as
    # glennklockwood.com/garden/processors/pvc reproduces them): 128 GB HBM2e, 1.6 GHz peak,
    # PCIe Gen5 x16, 600 W. Idle power is the same tenth of it as above. The memory clock and
    # the power range are not read by the intel backend (the range is unused: it sets no
    # limit); the memory total only bounds the simulated allocations, shown as N/A.
    "max-1550": Part("Intel GPU 8086:0BD5", "intel", 131072, 600, 0, 60, 1600, 0, 5, 16,
                     remaps_rows=False, gpm=False, mig=False, pci_device_id=0x0BD58086),
}


@dataclass(frozen=True)
class Job:
    """A workload on some GPUs. Activity figures are per-cycle shares while a step computes."""

    name: str
    user: str
    command: str
    gpus: tuple[int, ...]
    memory_mib: float
    step_s: float = 1.0
    duty: float = 0.97  # share of a step the GPU computes (the rest: waiting for input)
    intensity: float = 0.95  # share of the part's dynamic power drawn at the max clock
    memory_bound: float = 0.1  # share of the step that waits on DRAM rather than the clock
    sm_active: float = 0.85
    occupancy: float = 0.45
    tensor: float = 0.55
    dram: float = 0.30
    fp16: float = 0.40
    fp32: float = 0.10
    fp64: float = 0.0
    pcie_mibps: float = 300.0
    nvlink_mibps: float = 20000.0
    cpu_pct: float = 100.0
    host_memory_mib: float = 6144.0
    age_s: float = 3600.0  # how long before the simulation started the job began
    procs_per_gpu: int = 1  # extra processes (e.g. inference workers) per GPU
    idle: bool = False  # holds memory, runs nothing (a forgotten notebook)
    mig_device: int | None = None  # the MIG device (index on its one GPU) the job runs in
    # The Slurm job id its processes are attributed to, as gputop's attribution reads a real
    # one (a job's Xid and its end name it); None: a job no scheduler started.
    slurm_job: str | None = None


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    part: Part
    count: int
    jobs: tuple[Job, ...]
    power_limit_w: float | None = None  # None: the part's TDP
    slow_gpus: dict[int, float] = field(default_factory=dict)  # gpu -> clock ceiling fraction
    lost: dict[int, float] = field(default_factory=dict)  # gpu -> virtual second it falls off
    ambient_c: float = 28.0
    mig: dict[int, tuple[Slot, ...]] = field(default_factory=dict)  # gpu -> its MIG devices
    # gpu -> health readings it reports from the start ([faults.N] in the file): what the
    # dashboard's health badges and hints show (#27)
    faults: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Events on a schedule of virtual seconds ([[xid]] and [[thermal]] in the file): an Xid a
    # GPU reports at a moment, a thermal slowdown over a span (#29: alert rules end to end).
    xids: tuple[ScheduledXid, ...] = ()
    thermal: tuple[ThermalEvent, ...] = ()


@dataclass(frozen=True)
class ScheduledXid:
    gpu: int
    at: float  # virtual seconds after the simulation starts
    code: int


@dataclass(frozen=True)
class ThermalEvent:
    """GPU ``gpu`` overheats from ``start`` to ``end`` (virtual seconds): its heatsink clogs as a
    ``slow_gpus`` one does, so it heats up and slows its clock to ``ceiling`` of the maximum."""

    gpu: int
    start: float
    end: float
    ceiling: float = 0.75


# The readings a [faults.N] table may set, with the type each takes.
FAULTS: dict[str, type] = {
    "ecc_errors_uncorrected_volatile": int, "remapped_rows_pending": bool,
    "remapped_rows_failed": bool, "retired_pages_pending": bool, "pcie_width": int,
    "pcie_gen": int, "xid_last": int,
}


def _faults(data: dict[str, Any], count: int) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for gpu, readings in data.get("faults", {}).items():
        g = int(gpu)
        if not 0 <= g < count:
            raise ValueError(f"[faults.{gpu}] names a GPU outside 0..{count - 1}")
        unknown = sorted(set(readings) - set(FAULTS))
        if unknown:
            raise ValueError(f"[faults.{gpu}]: unknown reading {unknown[0]!r} "
                             f"(known: {', '.join(FAULTS)})")
        out[g] = {k: FAULTS[k](v) for k, v in readings.items()}
    return out


def _schedule(data: dict[str, Any], count: int) -> tuple[tuple[ScheduledXid, ...],
                                                         tuple[ThermalEvent, ...]]:
    """The [[xid]] and [[thermal]] events, each on a GPU of the node, in time order."""
    xids, thermal = [], []
    for raw in data.get("xid", []):
        xids.append(ScheduledXid(int(raw["gpu"]), float(raw["at"]), int(raw["code"])))
    for raw in data.get("thermal", []):
        event = ThermalEvent(int(raw["gpu"]), float(raw["from"]), float(raw["until"]),
                             float(raw.get("ceiling", 0.75)))
        if not event.start < event.end or not 0 < event.ceiling <= 1:
            raise ValueError(f"[[thermal]] on GPU {event.gpu}: needs from < until and a"
                             " ceiling in (0, 1]")
        thermal.append(event)
    for what, gpu in [("xid", x.gpu) for x in xids] + [("thermal", t.gpu) for t in thermal]:
        if not 0 <= gpu < count:
            raise ValueError(f"[[{what}]] names GPU {gpu}, outside 0..{count - 1}")
    return (tuple(sorted(xids, key=lambda x: (x.at, x.gpu))),
            tuple(sorted(thermal, key=lambda t: (t.start, t.gpu))))


class UnknownScenario(BackendError):
    exit_code = 2  # a usage error, as every other bad option value


def available() -> list[str]:
    root = datafiles.DATA / "scenarios"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def load(name: str) -> Scenario:
    root = datafiles.DATA / "scenarios"
    path = root / f"{name}.toml"
    if not name.replace("-", "").replace("_", "").isalnum() or not path.is_file():
        raise UnknownScenario(f"unknown scenario {name!r} (available: {', '.join(available())})")
    try:
        return parse(tomllib.loads(path.read_text(encoding="utf-8")), name)
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"scenario {name!r} is malformed: {exc}") from None


def parse(data: dict[str, Any], name: str) -> Scenario:
    part_key = data["part"]
    if part_key not in PARTS:
        raise ValueError(f"unknown part {part_key!r}")
    count = int(data["count"])
    mig = {int(k): place(v) for k, v in data.get("mig", {}).items()}
    if any(not 0 <= g < count for g in mig):
        raise ValueError(f"[mig] names a GPU outside 0..{count - 1}")
    xids, thermal = _schedule(data, count)
    jobs = []
    for raw in data.get("job", []):
        raw = dict(raw)
        raw["gpus"] = tuple(int(g) for g in raw["gpus"])
        if any(not 0 <= g < count for g in raw["gpus"]):
            raise ValueError(f"job {raw.get('name')!r} names a GPU outside 0..{count - 1}")
        jobs.extend(_per_instance(raw, mig))
    return Scenario(
        name=name,
        description=data.get("description", ""),
        part=PARTS[part_key],
        count=count,
        jobs=tuple(jobs),
        power_limit_w=data.get("power_limit_w"),
        slow_gpus={int(k): float(v) for k, v in data.get("slow_gpus", {}).items()},
        lost={int(k): float(v) for k, v in data.get("lost", {}).items()},
        ambient_c=float(data.get("ambient_c", 28.0)),
        mig=mig,
        faults=_faults(data, count),
        xids=xids,
        thermal=thermal,
    )


def _per_instance(raw: dict[str, Any], mig: dict[int, tuple[Slot, ...]]) -> list[Job]:
    """A job entry as jobs: one as written on whole GPUs, or with ``mig_devices`` one
    independent job in each of those MIG devices of each of its GPUs (a sweep's trials, an
    inference fleet). A process on a MIG GPU always runs inside an instance."""
    devices = raw.pop("mig_devices", None)
    name = raw.get("name")
    if devices is None:
        if any(g in mig for g in raw["gpus"]):
            raise ValueError(f"job {name!r} runs on a MIG GPU without naming its mig_devices")
        return [Job(**raw)]
    jobs = []
    for g in raw["gpus"]:
        slots = mig.get(g)
        if slots is None:
            raise ValueError(f"job {name!r} names mig_devices on GPU {g}, which has no [mig] layout")
        for d in devices:
            if not 0 <= int(d) < len(slots):
                raise ValueError(f"job {name!r} names MIG device {d} of GPU {g}, which has"
                                 f" {len(slots)}")
            jobs.append(Job(**{**raw, "gpus": (g,), "mig_device": int(d)}))
    return jobs
