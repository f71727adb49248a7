"""The simulator backend: a deterministic, physically plausible node.

State is a function of (scenario, seed, virtual time, power limits). Power limits persist in a
state file when one is given, so that, as on a real driver, a change outlives its process.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import cast

from gputop.backends.base import (
    CAP_ENERGY,
    CAP_POWER_LIMIT,
    CAP_PROCESSES,
    CAP_SATURATION,
    Backend,
    BackendError,
    BackendOptions,
    NoPermission,
    Unsupported,
    hostname,
)
from gputop.backends.instances import combine
from gputop.backends.sim import physics
from gputop.backends.sim.clock import SimClock
from gputop.backends.sim.mig import Slot
from gputop.backends.sim.scenario import Job, Part, Scenario, ThermalEvent, load
from gputop.core import budget, clock_events, userfile
from gputop.core.bounds import as_written, json_type
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import (
    Device,
    DeviceInfo,
    MigInstance,
    NodeInfo,
    Process,
    Saturation,
    Snapshot,
    XidEvent,
)
from gputop.core.model import Job as ModelJob

DRIVER_VERSION = "580.95.05"
CUDA_VERSION = "13.0"
NPU_DRIVER_VERSION = "25.0.rc1.1"  # what npu-smi's "Version:" reads on the 910B4 capture
# amdgpu's version on the MI300X host of the real `amd-smi version --json` capture (what
# /sys/module/amdgpu/version holds where the driver is packaged). The i915 of a Max node was
# never captured: its driver version is not made up, and stays None.
DRIVER_VERSIONS: dict[str, tuple[str | None, str | None]] = {
    "nvidia": (DRIVER_VERSION, CUDA_VERSION), "huawei": (NPU_DRIVER_VERSION, None),
    "amd": ("6.16.13", None), "intel": (None, None)}
# The sysfs backends (amd, intel) declare processes alone: no GPM, no power limit to set.
SYSFS_VENDORS = frozenset({"amd", "intel"})
UTIL_WINDOW_S = 1.0  # NVML averages utilization and power over about a second
THERMAL_TAU_S = 40.0
DEGREES_PER_WATT = 0.055
IDLE_CLOCK_MHZ = 345.0
RESERVED_MIB = 479.0
ALLOCATOR_RAMP_S = 40.0
ALLOCATOR_CHUNK_MIB = 2048.0
SUPPORTED_EVENTS = 0x1FF  # clock event reasons an H100 reports as supported (real 590 capture)
SLOW_GPU_EXTRA_C = 44.0  # a clogged heatsink: why this GPU throttles
# Set (to anything but "" or "0") to make set_power_limit refuse as NVML does for a non-root user,
# so the no-permission paths of the advisor can be exercised without a GPU.
NO_PERMISSION_ENV = "GPUTOP_SIM_NO_PERMISSION"
_SAT_VALUES = tuple(f.name for f in fields(Saturation) if f.name != "source")


class InvalidArgument(BackendError):
    exit_code = 2


def busy_integral(t: float, period: float, on: float) -> float:
    """Seconds of 'on' in [0, t] of a square wave that is on for ``on`` of every ``period``."""
    whole, rest = divmod(t, period)
    return whole * on + min(rest, on)


def busy_share(t0: float, t1: float, period: float, on: float) -> float:
    if t1 <= t0:
        return 1.0 if (t1 % period) < on else 0.0
    return (busy_integral(t1, period, on) - busy_integral(t0, period, on)) / (t1 - t0)


@dataclass(frozen=True)
class _MigDevice:
    """A MIG device of the scenario with the jobs in it; ``primary`` sets its load."""

    slot: Slot
    jobs: tuple[tuple[int, Job], ...]
    primary: Job | None


@dataclass
class _Thermal:
    temperature_c: float
    energy_j: float
    time: float


class SimBackend(Backend):
    name = "sim"
    capabilities = frozenset({CAP_PROCESSES, CAP_SATURATION, CAP_POWER_LIMIT, CAP_ENERGY})

    def __init__(self, options: BackendOptions) -> None:
        self.options = options
        self.scenario: Scenario = load(options.scenario)
        self.seed = options.seed
        self.clock: SimClock = SimClock(options.sim_speed)
        self.state_path = options.sim_state
        self._state_mtime: float | None = None
        self._lock = threading.Lock()
        self._limits: dict[int, float] = {}
        self._thermal: list[_Thermal] = []
        self._info: NodeInfo | None = None
        self._jobs_on: list[list[tuple[int, Job]]] = []
        self._mig: dict[int, tuple[_MigDevice, ...]] = {}
        self._step_cache: dict[tuple, tuple[float, dict[int, float]]] = {}
        self._now = 0.0  # the virtual time the state is computed for (scheduled thermal events)
        self._xids_until: float | None = None  # [[xid]] events up to here have been reported
        if self.scenario.part.vendor in SYSFS_VENDORS:
            self.capabilities = frozenset({CAP_PROCESSES})

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        sc = self.scenario
        part = sc.part
        devices = []
        npu = part.vendor == "huawei"  # npu-smi reports no UUID and no power limits
        sysfs = part.vendor in SYSFS_VENDORS  # no UUID either; Intel's: no memory, no range
        intel = part.vendor == "intel"
        for i in range(sc.count):
            devices.append(
                DeviceInfo(
                    index=i,
                    uuid=None if npu or sysfs else self._uuid(i),
                    name=part.name,
                    vendor=part.vendor,
                    pci_bus_id=self._bus_id(i),
                    memory_total_mib=None if intel else part.memory_total_mib,
                    power_limit_default_w=None if npu else part.tdp_w,
                    power_limit_min_w=None if npu or intel else part.power_min_w,
                    power_limit_max_w=None if npu or intel else part.tdp_w,
                    clock_sm_max_mhz=part.clock_sm_max_mhz,
                    clock_mem_max_mhz=None if npu or intel else part.clock_mem_mhz,
                )
            )
        driver, cuda = DRIVER_VERSIONS[part.vendor]
        self._info = NodeInfo(hostname(), self.name, driver, cuda, tuple(devices))
        self._jobs_on = [[(j, job) for j, job in enumerate(sc.jobs) if i in job.gpus]
                         for i in range(sc.count)]
        self._mig = {i: tuple(self._mig_device(i, slot) for slot in slots)
                     for i, slots in sc.mig.items()}
        default = sc.power_limit_w or part.tdp_w
        self._limits = {i: float(default) for i in range(sc.count)}
        self._read_state()
        self._thermal = []
        for i in range(sc.count):
            power = self._power(i, 0.0, UTIL_WINDOW_S)
            temp = self._ambient(i) + DEGREES_PER_WATT * power
            baseline = 3.6e6 * (1 + 10 * physics.mix64(self.seed, i, 7))  # energy since boot
            self._thermal.append(_Thermal(temp, baseline, 0.0))

    def _mig_device(self, i: int, slot: Slot) -> _MigDevice:
        jobs = tuple((j, job) for j, job in self._jobs_on[i] if job.mig_device == slot.index)
        primary = next((job for _, job in jobs if not job.idle), None)
        return _MigDevice(slot, jobs, primary)

    def info(self) -> NodeInfo:
        if self._info is None:
            raise BackendError("simulator not open")
        return self._info

    def _bus_id(self, i: int) -> str:
        """A PCI address as each tool writes it (npu-smi with a 4-digit domain, sysfs' uevent
        with a 4-digit one in lower case); a bus number has 8 bits, so GPUs past the 15th of a
        domain go to the next one."""
        domain, slot = divmod(i, 15)
        vendor = self.scenario.part.vendor
        if vendor in SYSFS_VENDORS:
            return f"{domain:04x}:{0x18 + 0x10 * slot:02x}:00.0"
        digits = 4 if vendor == "huawei" else 8
        return f"{domain:0{digits}X}:{0x18 + 0x10 * slot:02X}:00.0"

    # ------------------------------------------------------------------ power limits
    def set_power_limit(self, device: int, watts: float) -> None:
        if self.scenario.part.vendor == "huawei":
            raise Unsupported("npu-smi offers no power limit to set on Ascend NPUs")
        if self.scenario.part.vendor in SYSFS_VENDORS:
            # as the real backend (Backend.set_power_limit): setting the cap is not built yet
            raise Unsupported(f"the {self.scenario.part.vendor} backend cannot set power limits")
        info = self.info()
        if os.environ.get(NO_PERMISSION_ENV, "") not in ("", "0"):
            raise NoPermission(
                "changing a power limit needs root or CAP_SYS_ADMIN"
                f" (simulated: {NO_PERMISSION_ENV} is set)"
            )
        if not 0 <= device < len(info.devices):
            raise InvalidArgument(f"no GPU {device}")
        # every simulated GPU has its limits
        lo = cast(float, info.devices[device].power_limit_min_w)
        hi = cast(float, info.devices[device].power_limit_max_w)
        if not lo <= watts <= hi:
            raise InvalidArgument(
                f"power limit {watts:g} W for GPU {device} is outside its range {lo:g}-{hi:g} W"
            )
        with self._lock:
            self._advance(self.clock.monotonic())
            self._read_state()
            limits = {**self._limits, device: float(watts)}
            self._write_state(limits)  # first: a limit that cannot be kept is not set
            self._limits = limits

    def power_limit(self, device: int) -> float:
        return self._limits[device]

    def _read_state(self) -> None:
        """Take the state file's power limits, when it changed since it was last read (every
        sample looks: another process, an advisor run, may have set a limit)."""
        if not self.state_path:
            return
        try:
            mtime = os.stat(self.state_path).st_mtime_ns
        except FileNotFoundError:
            return
        except OSError as exc:
            raise self._state_error(f"cannot read it: {exc.strerror or exc}") from None
        if mtime == self._state_mtime:
            return
        limits = self._checked_limits(self._state_document())
        self._state_mtime = mtime
        self._limits.update(limits)

    def _state_document(self) -> dict:
        """The state file's JSON document ({} where there is none yet), read within the bounds
        of every file a user names; one BackendError line naming the file otherwise."""
        try:
            data = userfile.load_json(userfile.read_text(cast(str, self.state_path)))
        except FileNotFoundError:
            return {}
        except userfile.FileProblem as exc:
            raise self._state_error(str(exc)) from None
        if not isinstance(data, dict):
            raise self._state_error(f"expected a JSON object, found {json_type(data)}")
        unknown = [key for key in data if key != "power_limits"]
        if unknown:  # a misspelt "power_limit" would otherwise set nothing, silently
            raise self._state_error(f"unknown key {userfile.one_line(repr(unknown[0]), 60)}"
                                    ' (the only one is "power_limits")')
        return data

    def _state_error(self, why: str) -> BackendError:
        return BackendError(f"simulator state file {self.state_path}: {why}")

    def _checked_limits(self, data: dict) -> dict[int, float]:
        """The file's power limits for this node's GPUs, each a finite number of watts inside the
        GPU's range, as a driver would hold. Anything else is refused whole, before any is used:
        a limit of 0 W would make the advisor 'restore' a value the device cannot take."""
        bad = self._state_error
        saved = data.get("power_limits", {})
        if not isinstance(saved, dict):
            raise bad(f'"power_limits" must map GPU UUIDs to watts, found {json_type(saved)}')
        limits: dict[int, float] = {}
        for i, dev in enumerate(self.info().devices):
            if dev.uuid is None or dev.uuid not in saved:
                continue
            value = saved[dev.uuid]
            lo, hi = dev.power_limit_min_w, dev.power_limit_max_w
            # NaN and infinities fail the range test; so does a 400-digit integer.
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or lo is None or hi is None or not lo <= value <= hi:
                raise bad(f"power limit {as_written(value)} for GPU {i} is not a number of watts in its"
                          f" range {lo:g}-{hi:g} W")
            limits[i] = float(value)
        return limits

    def _write_state(self, limits: dict[int, float]) -> None:
        """Write ``limits`` into the state file, keeping the limits it holds for other GPUs (of
        other nodes or scenarios). Nothing is written unless the whole file can be (a read-only
        folder is one BackendError line, and the limit is not set)."""
        if not self.state_path:
            return
        from gputop.core import jsonout  # json: only a state file needs it, not the dashboard

        data = self._state_document()
        self._checked_limits(data)  # as it is now: a file that is wrong is refused, not mended
        saved = data.setdefault("power_limits", {})
        for i in range(self.scenario.count):
            saved[self._uuid(i)] = limits[i]
        try:
            userfile.write_atomic(self.state_path,
                                  jsonout.dumps(data, indent=1, sort_keys=True))
        except userfile.FileProblem as exc:
            raise self._state_error(str(exc)) from None
        self._state_mtime = os.stat(self.state_path).st_mtime_ns

    # ------------------------------------------------------------------ physics per GPU
    def _uuid(self, i: int, *instance: int) -> str:
        salt = sum(map(ord, self.scenario.name))
        hexs = "".join(f"{int(physics.mix64(self.seed, i, salt, k, *instance) * 2**64):016x}"
                       for k in (1, 2))
        return f"GPU-{hexs[:8]}-{hexs[8:12]}-{hexs[12:16]}-{hexs[16:20]}-{hexs[20:32]}"

    def _hot(self, i: int) -> ThermalEvent | None:
        """The scheduled thermal event GPU i is in now, if any."""
        for event in self.scenario.thermal:
            if event.gpu == i and event.start <= self._now < event.end:
                return event
        return None

    def _ceiling(self, i: int) -> float:
        """The share of its max clock GPU i may reach: its clogged heatsink's, if any."""
        hot = self._hot(i)
        return min(self.scenario.slow_gpus.get(i, 1.0), hot.ceiling if hot else 1.0)

    def _ambient(self, i: int) -> float:
        hot = i in self.scenario.slow_gpus or self._hot(i) is not None
        extra = SLOW_GPU_EXTRA_C if hot else 0.0
        return self.scenario.ambient_c + extra + 3 * physics.mix64(self.seed, i, 3)

    def _primary(self, i: int) -> Job | None:
        for _, job in self._jobs_on[i]:
            if not job.idle:
                return job
        return None

    def _clock_fraction(self, i: int, job: Job) -> tuple[float, bool]:
        """The clock while ``job`` computes on GPU i, and whether the power cap set it."""
        part = self.scenario.part
        dynamic = part.tdp_w - part.idle_w
        capped = physics.capped_clock(self._limits[i], part.idle_w, dynamic, self._intensity(i, job))
        ceiling = self._ceiling(i)
        return min(capped, ceiling), capped < min(1.0, ceiling) - 1e-9

    def _intensity(self, i: int, job: Job) -> float:
        """The share of the GPU's dynamic power drawn at the max clock while ``job`` computes.
        Under MIG all instances share one clock and one power limit: the cap is set by every
        instance's job computing at once, each on its share of the SMs."""
        devices = self._mig.get(i)
        if devices is None:
            return job.intensity
        return sum(d.slot.profile.compute_share * d.primary.intensity
                   for d in devices if d.primary is not None)

    def _speed(self, i: int, job: Job) -> float:
        return physics.relative_speed(self._clock_fraction(i, job)[0], job.memory_bound)

    def _step(self, job: Job) -> tuple[float, dict[int, float]]:
        """The job's step period and each GPU's compute time in it (data-parallel: all wait
        for the slowest at the gradient all-reduce)."""
        # Memoised on the limits it depends on: a sample asks for each job's step many times,
        # and `-lms 10` query logging wants a sample to cost well under a millisecond.
        key = (id(job), tuple(self._limits[g] for g in job.gpus),
               tuple(self._ceiling(g) for g in job.gpus))
        cached = self._step_cache.get(key)
        if cached is None:
            compute = {g: job.duty * job.step_s / self._speed(g, job) for g in job.gpus}
            cached = ((1 - job.duty) * job.step_s + max(compute.values()), compute)
            if len(self._step_cache) > 256:
                self._step_cache.clear()
            self._step_cache[key] = cached
        return cached

    def _phase(self, i: int, job: Job) -> float:
        gpu = i if len(job.gpus) == 1 else job.gpus[0]
        instance = () if job.mig_device is None else (job.mig_device,)  # each on its own beat
        return job.step_s * physics.mix64(self.seed, gpu, 11, *instance)

    def _busy(self, i: int, t0: float, t1: float) -> float:
        """The share of [t0, t1] GPU i computes; under MIG, weighted by each instance's SMs."""
        devices = self._mig.get(i)
        if devices is not None:
            return sum(d.slot.profile.compute_share * self._job_busy(i, d.primary, t0, t1)
                       for d in devices if d.primary is not None)
        job = self._primary(i)
        return 0.0 if job is None else self._job_busy(i, job, t0, t1)

    def _job_busy(self, i: int, job: Job, t0: float, t1: float) -> float:
        period, compute = self._step(job)
        off = self._phase(i, job)
        return busy_share(t0 + off, t1 + off, period, compute[i])

    def _power(self, i: int, t0: float, t1: float) -> float:
        part = self.scenario.part
        job = self._primary(i)
        context = bool(self._jobs_on[i])
        idle_w = part.idle_w + (0.05 * (part.tdp_w - part.idle_w) if context else 0.0)
        devices = self._mig.get(i)
        if devices is not None:
            return idle_w + sum(
                d.slot.profile.compute_share * self._job_busy(i, d.primary, t0, t1)
                * max(0.0, self._busy_power(i, d.primary) - idle_w)
                for d in devices if d.primary is not None)
        if job is None:
            return idle_w
        return idle_w + self._busy(i, t0, t1) * max(0.0, self._busy_power(i, job) - idle_w)

    def _busy_power(self, i: int, job: Job) -> float:
        """What GPU i draws while ``job`` computes on all of it at the clock the cap allows."""
        part = self.scenario.part
        f, _ = self._clock_fraction(i, job)
        return physics.power_draw(part.idle_w, part.tdp_w - part.idle_w, job.intensity, f)

    def _advance(self, t: float) -> None:
        """Integrate temperature and energy up to virtual time t."""
        self._now = t
        for i, th in enumerate(self._thermal):
            dt = t - th.time
            if dt <= 0:
                continue
            power = self._power(i, th.time, t)
            th.energy_j += power * dt
            target = self._ambient(i) + DEGREES_PER_WATT * power
            th.temperature_c = physics.settle(th.temperature_c, target, dt, THERMAL_TAU_S)
            th.time = t

    # ------------------------------------------------------------------ sampling
    def sample(self, devices: Sequence[int] | None = None, *,
               wants: Wants | None = EVERYTHING) -> Snapshot:
        info = self.info()
        t = self.clock.monotonic()
        with self._lock:
            self._read_state()
            self._advance(t)
            wanted = range(len(info.devices)) if devices is None else devices
            detail = budget.wanted(wants, "processes") or budget.wanted(wants, "saturation")
            xids = self._xids_since(t) if budget.wanted(wants, "xid_events") else {}
            devs = tuple(self._device(info.devices[i], t, detail, xids.get(i, ()))
                         for i in wanted)
        return Snapshot(
            host=info.host,
            time=self.clock.wall(),
            backend=self.name,
            devices=devs,
            driver_version=info.driver_version,
            cuda_version=info.cuda_version,
        )

    def _xids_since(self, t: float) -> dict[int, tuple[XidEvent, ...]]:
        """The scenario's [[xid]] events after the last sample up to ``t``, by GPU, each at its
        own scheduled time; every event is reported once."""
        since = self._xids_until
        self._xids_until = t
        out: dict[int, list[XidEvent]] = {}
        for x in self.scenario.xids:
            if (since is None or x.at > since) and x.at <= t:
                out.setdefault(x.gpu, []).append(XidEvent(x.gpu, x.code, self.clock.epoch + x.at))
        return {gpu: tuple(events) for gpu, events in out.items()}

    def _xid_last(self, i: int, t: float) -> int:
        """The last Xid GPU i reported by ``t`` (0: none), as NVML's gauge holds it."""
        last = self.scenario.faults.get(i, {}).get("xid_last", 0)
        for x in self.scenario.xids:
            if x.gpu == i and x.at <= t:
                last = x.code
        return last

    def _noise(self, i: int, t: float, salt: int, spread: float) -> float:
        """A multiplicative jitter of +-spread/2, fixed for each (GPU, 100 ms slot)."""
        return 1.0 + spread * (physics.mix64(self.seed, i, int(t * 10), salt) - 0.5)

    def _device(self, di: DeviceInfo, t: float, detail: bool = True,
                xids: tuple[XidEvent, ...] = ()) -> Device:
        i = di.index
        sc = self.scenario
        part = sc.part
        lost_at = sc.lost.get(i)
        if lost_at is not None and t >= lost_at:
            return Device(index=i, uuid=di.uuid, name=di.name, vendor=di.vendor,
                          pci_bus_id=di.pci_bus_id, status="lost",
                          status_reason="GPU has fallen off the bus", xid_events=xids)
        job = self._primary(i)
        busy = self._busy(i, t - UTIL_WINDOW_S, t)
        power = self._power(i, t - UTIL_WINDOW_S, t) * self._noise(i, t, 1, 0.02)
        th = self._thermal[i]
        reasons: list[str] = []
        speed = 1.0
        work_rate: float | None = None
        if job is None:
            clock = IDLE_CLOCK_MHZ if not self._jobs_on[i] else part.clock_sm_max_mhz
            reasons.append("gpu_idle")
        else:
            fraction, power_capped = self._clock_fraction(i, job)
            computing = self._busy(i, t, t) > 0
            clock = part.clock_sm_max_mhz * (fraction if computing else 1.0)
            if computing and power_capped:
                reasons.append("sw_power_cap")
            if computing and self._ceiling(i) < 1.0:
                reasons.append("sw_thermal_slowdown")
            if not computing:
                reasons.append("gpu_idle")
            speed = self._speed(i, job)
            period, _ = self._step(job)
            work_rate = job.step_s / period
        util = round(100 * busy)
        used = self._memory_used(i, t)
        nvidia = part.vendor == "nvidia"
        remaps, retires = nvidia and part.remaps_rows, nvidia and not part.remaps_rows
        mig = i in self._mig  # its instances hold the saturation and processes (_as_mig)
        whole = detail and not mig
        sat = self._saturation(i, job, busy, speed, t) if whole else Saturation()
        dev = Device(
            index=i,
            uuid=di.uuid,
            name=di.name,
            vendor=di.vendor,
            pci_bus_id=di.pci_bus_id,
            minor_number=i if nvidia else None,
            memory_total_mib=part.memory_total_mib,
            memory_used_mib=used,
            memory_reserved_mib=RESERVED_MIB if part.vendor == "nvidia" else None,
            utilization_gpu_pct=util,
            utilization_memory_pct=round(100 * busy * (job.dram * speed if job else 0.0)),
            temperature_c=round(th.temperature_c),
            temperature_memory_c=round(th.temperature_c + 7),
            fan_pct=None,  # SXM parts are cooled by the chassis, not a fan of their own
            power_draw_w=round(power, 2),
            power_limit_w=self._limits[i],
            # the simulator's one limiter: what is set is what is enforced
            power_management_limit_w=self._limits[i],
            power_limit_default_w=part.tdp_w,
            power_limit_min_w=part.power_min_w,
            power_limit_max_w=part.tdp_w,
            energy_j=round(th.energy_j, 3),
            clock_sm_mhz=round(clock),
            clock_mem_mhz=part.clock_mem_mhz,
            clock_sm_max_mhz=part.clock_sm_max_mhz,
            clock_mem_max_mhz=part.clock_mem_mhz,
            pstate="P0",
            clock_event_reasons=tuple(reasons),
            clock_event_mask=clock_events.encode(reasons),
            pcie_gen=part.pcie_gen,
            pcie_gen_max=part.pcie_gen,
            pcie_width=part.pcie_width,
            pcie_width_max=part.pcie_width,
            ecc_mode=True if part.vendor == "nvidia" else None,
            persistence_mode=True if part.vendor == "nvidia" else None,
            display_active=False if part.vendor == "nvidia" else None,  # headless servers
            mig_mode="disabled" if nvidia and part.mig else None,
            compute_mode="Default" if part.vendor == "nvidia" else None,
            serial=f"{1650000000000 + int(1e9 * physics.mix64(self.seed, i, 5))}",
            vbios_version="96.00.A5.00.01" if part.vendor == "nvidia" else None,
            # nvidia-smi query fields (gputop/query): what follows from the state above
            memory_free_mib=part.memory_total_mib - used - (RESERVED_MIB if nvidia else 0.0),
            clock_graphics_mhz=round(clock) if nvidia else None,  # one domain with SM on these parts
            clock_graphics_max_mhz=part.clock_sm_max_mhz if nvidia else None,
            clock_event_supported_mask=SUPPORTED_EVENTS if nvidia else None,
            ecc_mode_pending=True if nvidia else None,
            mig_mode_pending="disabled" if nvidia and part.mig else None,
            # A training job uses no video engines; a healthy part has no errors to count.
            utilization_encoder_pct=0 if nvidia else None,
            utilization_decoder_pct=0 if nvidia else None,
            pcie_replay_count=0 if nvidia else None,
            xid_last=self._xid_last(i, t) if nvidia else None,
            xid_events=xids if nvidia else (),
            remapped_rows_correctable=0 if remaps else None,
            remapped_rows_uncorrectable=0 if remaps else None,
            remapped_rows_pending=False if remaps else None,
            remapped_rows_failed=False if remaps else None,
            retired_pages_sbe=0 if retires else None,
            retired_pages_dbe=0 if retires else None,
            retired_pages_pending=False if retires else None,
            nvlink_crc_flit_errors=0 if nvidia else None,  # every part simulated is SXM: NVLink
            nvlink_crc_data_errors=0 if nvidia else None,
            nvlink_replay_errors=0 if nvidia else None,
            nvlink_recovery_errors=0 if nvidia else None,
            saturation=sat,
            processes=self._processes(i, self._jobs_on[i], busy, t) if whole else (),
            # None where the rate is unknown, which the model's dict[str, float] does not say
            sim={"work_rate": round(work_rate, 5) if work_rate is not None else None},  # type: ignore[dict-item]
        )
        if i in self.scenario.faults:
            # xid_last is the fault's until a scheduled Xid follows it (_xid_last)
            dev = replace(dev, **{k: v for k, v in self.scenario.faults[i].items()
                                  if k != "xid_last"})
        if mig:
            dev = self._as_mig(dev, t, detail)
        if part.vendor == "huawei":
            dev = _as_npu_smi(dev, i)
        elif part.vendor == "amd":
            dev = _as_amdgpu(dev, part, self._unique_id(i))
        elif part.vendor == "intel":
            dev = _as_i915(dev, part)
        return dev

    def _unique_id(self, i: int) -> str:
        """A serial as amdgpu prints unique_id: 16 hex digits."""
        return f"{int(physics.mix64(self.seed, i, 5) * 2**64):016x}"

    def _as_mig(self, dev: Device, t: float, detail: bool) -> Device:
        """A MIG-enabled GPU as its driver reports it: its instances hold the memory, the
        processes and the GPM streams; the parent keeps power, clocks and temperature, and
        reports no utilization (``[N/A]`` in nvidia-smi)."""
        i = dev.index
        instances = tuple(self._instance(i, d, t, detail) for d in self._mig[i])
        used = sum(cast(float, inst.memory_used_mib) for inst in instances)  # each one reports it
        rates = [job.step_s / self._step(job)[0] for d in self._mig[i]
                 if (job := d.primary) is not None]
        sat = Saturation()
        if detail:
            parts: list[tuple[dict[str, float | None], float]] = [
                ({k: getattr(inst.saturation, k) for k in _SAT_VALUES}, cast(int, inst.sm_count))
                for inst in instances]
            sat = Saturation(source="sim", **{k: None if v is None else round(v, 1)
                                              for k, v in combine(parts).items()})
        return replace(
            dev,
            mig_mode="enabled",
            mig_mode_pending="enabled",
            utilization_gpu_pct=None,
            utilization_memory_pct=None,
            utilization_encoder_pct=None,
            utilization_decoder_pct=None,
            # the row remapper is not reported under MIG either (nvidia-smi: [N/A])
            remapped_rows_correctable=None,
            remapped_rows_uncorrectable=None,
            remapped_rows_pending=None,
            remapped_rows_failed=None,
            memory_used_mib=used,
            memory_free_mib=cast(float, dev.memory_total_mib) - used - RESERVED_MIB,
            saturation=sat,
            processes=tuple(p for inst in instances for p in inst.processes),
            mig_instances=instances,
            # the instances' jobs' mean throughput: what a power limit on the parent costs them
            sim={"work_rate": round(sum(rates) / len(rates), 5) if rates else None},  # type: ignore[dict-item]
        )

    def _instance(self, i: int, d: _MigDevice, t: float, detail: bool) -> MigInstance:
        slot, job = d.slot, d.primary
        profile = slot.profile
        busy = speed = 0.0
        if job is not None:
            busy = self._job_busy(i, job, t - UTIL_WINDOW_S, t)
            speed = self._speed(i, job)
        held = sum(_allocator(j.memory_mib, j.age_s + t) for _, j in d.jobs)
        return MigInstance(
            gpu_instance_id=slot.gpu_instance_id,
            compute_instance_id=slot.compute_instance_id,
            index=slot.index,
            profile=profile.name,
            uuid=self._mig_uuid(i, slot),
            sm_count=profile.sm_count,
            memory_total_mib=profile.memory_total_mib,
            memory_used_mib=min(profile.memory_total_mib, profile.overhead_mib + held),
            saturation=self._saturation(i, job, busy, speed, t) if detail else Saturation(),
            processes=self._processes(i, d.jobs, busy, t, slot) if detail else (),
        )

    def _mig_uuid(self, i: int, slot: Slot) -> str:
        return "MIG-" + self._uuid(i, slot.gpu_instance_id)[4:]

    def _saturation(self, i: int, job: Job | None, busy: float, speed: float, t: float) -> Saturation:
        if not self.scenario.part.gpm:
            return Saturation()  # measured by nothing, as on the real part
        if job is None:
            return Saturation(source="sim", gr_engine_active_pct=0.0, sm_active_pct=0.0,
                              sm_occupancy_pct=0.0,
                              tensor_active_pct=0.0, dram_bw_pct=0.0, fp16_pct=0.0, fp32_pct=0.0,
                              fp64_pct=0.0, pcie_tx_mibps=0.0, pcie_rx_mibps=0.0,
                              nvlink_tx_mibps=0.0, nvlink_rx_mibps=0.0)

        def pct(share: float, salt: int) -> float:
            return round(min(100.0, 100 * share * busy * self._noise(i, t, salt, 0.02)), 1)

        def rate(mibps: float, salt: int) -> float:
            return round(mibps * busy * speed * self._noise(i, t, salt, 0.04), 1)

        return Saturation(
            source="sim",
            # Graphics-engine activity is time with any kernel resident, like utilization.gpu.
            gr_engine_active_pct=round(min(100.0, 100 * busy), 1),
            # GPM's SM, tensor and pipe figures are per cycle: a lower clock does not lower them.
            sm_active_pct=pct(job.sm_active, 21),
            sm_occupancy_pct=pct(job.occupancy, 22),
            tensor_active_pct=pct(job.tensor, 23),
            # DRAM bandwidth is per second of time: it follows the work actually done.
            dram_bw_pct=pct(job.dram * speed, 24),
            fp16_pct=pct(job.fp16, 25),
            fp32_pct=pct(job.fp32, 26),
            fp64_pct=pct(job.fp64, 27),
            pcie_tx_mibps=rate(job.pcie_mibps * 0.3, 28),
            pcie_rx_mibps=rate(job.pcie_mibps, 29),
            nvlink_tx_mibps=rate(job.nvlink_mibps if len(job.gpus) > 1 else 0.0, 30),
            nvlink_rx_mibps=rate(job.nvlink_mibps if len(job.gpus) > 1 else 0.0, 31),
        )

    def _memory_used(self, i: int, t: float) -> float:
        total = 0.0
        for _, job in self._jobs_on[i]:
            total += _allocator(job.memory_mib, job.age_s + t)
        return min(total, self.scenario.part.memory_total_mib - RESERVED_MIB)

    def _processes(self, i: int, jobs: Sequence[tuple[int, Job]], busy: float, t: float,
                   slot: Slot | None = None) -> tuple[Process, ...]:
        procs = []
        epoch = self.clock.epoch
        for j, job in jobs:
            rank = job.gpus.index(i)
            n = max(1, job.procs_per_gpu)
            memory = _allocator(job.memory_mib, job.age_s + t) / n
            for k in range(n):
                pid = 2000 + int(60000 * physics.mix64(self.seed, j, i, k))
                command = job.command
                if len(job.gpus) > 1:
                    command += f" --local_rank={rank}"
                if n > 1:
                    command += f" --worker={k}"
                # one string per process for the whole run, not one per sample: the history
                # holds 600 samples (a minute at -interval 0.1), each with every process
                command = sys.intern(command)
                cpu = 0.0 if job.idle else job.cpu_pct * self._noise(i, t, 40 + k, 0.1)
                procs.append(
                    Process(
                        pid=pid,
                        user=job.user,
                        name=sys.intern(os.path.basename(command.split()[0])),
                        command=command,
                        gpu_memory_mib=round(memory),
                        # NVML has no per-process utilization under MIG
                        sm_pct=None if slot else 0.0 if job.idle else round(100 * busy / n),
                        cpu_pct=round(cpu, 1),
                        host_memory_mib=round(job.host_memory_mib / n),
                        started=round(epoch - job.age_s - 60 * k, 3),
                        type="C",
                        gpu_instance_id=slot.gpu_instance_id if slot else None,
                        compute_instance_id=slot.compute_instance_id if slot else None,
                        job=None if job.slurm_job is None else ModelJob("slurm", job.slurm_job),
                    )
                )
        return tuple(procs)


def _as_npu_smi(dev: Device, i: int) -> Device:
    """An Ascend part reports what the npu-smi backend can read, and nothing NVIDIA-only."""
    return replace(
        dev,
        npu_id=i,
        chip_id=0,
        uuid=None,
        power_limit_w=None,
        power_limit_default_w=None,
        power_limit_min_w=None,
        power_limit_max_w=None,
        energy_j=None,
        pstate=None,
        clock_event_reasons=None,
        clock_event_mask=None,
        pcie_gen=None,
        pcie_gen_max=None,
        pcie_width=None,
        pcie_width_max=None,
        serial=None,
        clock_mem_max_mhz=None,
        saturation=Saturation(),
        processes=tuple(replace(p, sm_pct=None) for p in dev.processes),
    )


def _as_amdgpu(dev: Device, part: Part, serial: str) -> Device:
    """An MI300X reports what the amd backend reads from amdgpu's sysfs (docs/backends.md), and
    nothing it cannot: no UUID, energy counter, P-state, throttle reasons, ECC or process type.
    MI300 has no edge sensor: its temperature is the junction's (hotspot), as the backend says."""
    return replace(
        dev,
        uuid=None,
        energy_j=None,
        power_management_limit_w=None,
        memory_free_mib=None,
        pstate=None,
        clock_event_reasons=None,
        clock_event_mask=None,
        temperature_hotspot_c=dev.temperature_c,
        pcie_replay_count=0,  # a healthy link retries nothing
        serial=serial,
        vbios_version=part.vbios_version,
        pci_device_id=part.pci_device_id,
        pci_sub_device_id=part.pci_sub_device_id,
        processes=tuple(replace(p, type=None) for p in dev.processes),
    )


def _as_i915(dev: Device, part: Part) -> Device:
    """A Max 1550 reports what the intel backend reads from i915's sysfs (docs/backends.md):
    power from the energy counter, its limit, one temperature, the render clock and the link.
    i915 prints no memory figure, and the Max 1550's utilization is N/A as xpu-smi reports it
    (issue #32): nothing here claims a figure the real part does not give."""
    return replace(
        dev,
        uuid=None,
        memory_total_mib=None,
        memory_used_mib=None,
        memory_free_mib=None,
        utilization_gpu_pct=None,
        utilization_memory_pct=None,
        temperature_memory_c=None,
        power_limit_min_w=None,
        power_limit_max_w=None,
        power_management_limit_w=None,
        clock_mem_mhz=None,
        clock_mem_max_mhz=None,
        pstate=None,
        clock_event_reasons=None,
        clock_event_mask=None,
        serial=None,
        pci_device_id=part.pci_device_id,
        processes=tuple(replace(p, type=None) for p in dev.processes),
    )


def _allocator(peak_mib: float, age_s: float) -> float:
    """A caching allocator: memory grows in chunks during the first steps, then holds."""
    if age_s <= 0:
        return 0.0
    share = min(1.0, age_s / ALLOCATOR_RAMP_S)
    chunks = -(-peak_mib * share // ALLOCATOR_CHUNK_MIB)  # whole segments, rounded up
    return min(peak_mib, chunks * ALLOCATOR_CHUNK_MIB)
