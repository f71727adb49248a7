"""Microseconds per snapshot, 8 GPUs x 32 processes: simulator, and the NVML backend beside its
floor, both through the real nvidia-ml-py binding on the C fake of libnvidia-ml
(../shared/tools/fakenvml, built into a temporary folder as bench/peers.py does): the floor is
the same NVML calls plus psutil made directly, as a bare pynvml script would make them.

Every tick is one second of virtual time apart (as at the default 1 s interval), so each one
does the full work: new per-process samples and the slow-value refresh every 10 ticks, in the
backend and in the floor alike (the C fake has no GPM, so neither reads it). The 32 GPU processes
are real `sleep` processes, so the host lookups (CPU%, RSS; user, name, command line once per
pid) are real. The NVML part runs in a child process, which loads the fake at start-up.

    python bench/snapshot.py [--ticks N] [--runs N] [--no-cli]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from gputop.backends.base import BackendOptions  # noqa: E402
from gputop.backends.nvml.reads import SLOW_REFRESH_S  # noqa: E402
from gputop.backends.sim.backend import SimBackend  # noqa: E402
from tests.support import cfake  # noqa: E402
from tests.support.fake_pynvml import ManualClock  # noqa: E402

GPUS = 8
PROCS_PER_GPU = 4


def per_tick_us(fn, clock: ManualClock | None, ticks: int, runs: int) -> float:
    """Median over ``runs`` of the mean µs per call of ``fn`` over ``ticks`` calls."""
    results = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(ticks):
            if clock is not None:
                clock.t += 1.0
            fn()
        results.append((time.perf_counter() - start) / ticks * 1e6)
    return statistics.median(results)


def bench_sim(ticks: int, runs: int) -> float:
    backend = SimBackend(BackendOptions(scenario="crowded"))
    backend.open()
    clock = backend.clock
    assert sum(len(d.processes) for d in backend.sample().devices) == GPUS * PROCS_PER_GPU

    def tick() -> None:
        clock._virtual += 1.0  # one second of simulated time per tick, no real sleeping
        backend.sample()

    return per_tick_us(tick, None, ticks, runs)


def bench_nvml():
    from gputop.backends.nvml.backend import NvmlBackend

    clock = ManualClock()  # moved one second a tick by per_tick_us
    backend = NvmlBackend(BackendOptions(), clock=clock)
    backend.open()
    snap = backend.sample()
    assert sum(len(d.processes) for d in snap.devices) == GPUS * PROCS_PER_GPU
    assert all(p.user for d in snap.devices for p in d.processes)
    return backend.sample, clock, backend.close


def bench_floor():
    """The same calls without the backend: what a bare pynvml + psutil script does per tick."""
    import pynvml as nv

    nv.nvmlInit()
    handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
    static = []
    for h in handles:
        pci = nv.nvmlDeviceGetPciInfo(h)
        static.append((nv.nvmlDeviceGetName(h), nv.nvmlDeviceGetUUID(h), pci.busId,
                       pci.pciDeviceId, pci.pciSubSystemId,
                       nv.nvmlDeviceGetPowerManagementLimitConstraints(h),
                       nv.nvmlDeviceGetPowerManagementDefaultLimit(h),
                       nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM),
                       nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM),
                       nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_GRAPHICS),
                       nv.nvmlDeviceGetCudaComputeCapability(h),
                       nv.nvmlDeviceGetSupportedClocksEventReasons(h)))
    seen = [0] * len(handles)
    procs: dict[int, psutil.Process] = {}
    facts: dict[int, tuple] = {}
    slow: list[tuple] = [()] * len(handles)
    count = [0]
    mem_temp = [nv.NVML_FI_DEV_MEMORY_TEMP]
    ecc_counters = [(e, c) for c in (nv.NVML_VOLATILE_ECC, nv.NVML_AGGREGATE_ECC)
                    for e in (nv.NVML_MEMORY_ERROR_TYPE_CORRECTED,
                              nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED)]

    def tick() -> list[dict]:
        refresh = count[0] % int(SLOW_REFRESH_S) == 0
        count[0] += 1
        out = []
        for i, h in enumerate(handles):
            if refresh:
                slow[i] = (nv.nvmlDeviceGetEccMode(h), nv.nvmlDeviceGetMigMode(h),
                           nv.nvmlDeviceGetPersistenceMode(h), nv.nvmlDeviceGetComputeMode(h),
                           nv.nvmlDeviceGetEnforcedPowerLimit(h),
                           nv.nvmlDeviceGetMaxPcieLinkGeneration(h),
                           nv.nvmlDeviceGetMaxPcieLinkWidth(h), nv.nvmlDeviceGetSerial(h),
                           nv.nvmlDeviceGetVbiosVersion(h),
                           [nv.nvmlDeviceGetTotalEccErrors(h, e, c) for e, c in ecc_counters])
            mem = nv.nvmlDeviceGetMemoryInfo(h, nv.nvmlMemory_v2)
            util = nv.nvmlDeviceGetUtilizationRates(h)
            dev = {
                "static": static[i], "slow": slow[i],
                "used": mem.used, "reserved": mem.reserved, "free": mem.free,
                "gpu": util.gpu, "mem": util.memory,
                "enc": nv.nvmlDeviceGetEncoderUtilization(h)[0],
                "dec": nv.nvmlDeviceGetDecoderUtilization(h)[0],
                "temp": nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
                "mem_temp": nv.nvmlDeviceGetFieldValues(h, mem_temp)[0].value.uiVal,
                "pstate": nv.nvmlDeviceGetPerformanceState(h),
                "events": nv.nvmlDeviceGetCurrentClocksEventReasons(h),
                "power": nv.nvmlDeviceGetPowerUsage(h),
                "energy": nv.nvmlDeviceGetTotalEnergyConsumption(h),
                "sm": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                "memclk": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
                "grclk": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_GRAPHICS),
                "videoclk": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_VIDEO),
                "gen": nv.nvmlDeviceGetCurrPcieLinkGeneration(h),
                "width": nv.nvmlDeviceGetCurrPcieLinkWidth(h),
            }
            running = {p.pid: p.usedGpuMemory
                       for p in nv.nvmlDeviceGetComputeRunningProcesses_v3(h)}
            for p in nv.nvmlDeviceGetGraphicsRunningProcesses_v3(h):
                running.setdefault(p.pid, p.usedGpuMemory)
            try:
                samples = nv.nvmlDeviceGetProcessUtilization(h, seen[i])
            except nv.NVMLError_NotFound:
                samples = []
            sm = {}
            for s in samples:
                sm[s.pid] = s.smUtil
                seen[i] = max(seen[i], s.timeStamp)
            rows = []
            for pid, used in running.items():
                proc = procs.get(pid)
                if proc is None:
                    proc = procs[pid] = psutil.Process(pid)
                    with proc.oneshot():
                        facts[pid] = (proc.username(), proc.name(), " ".join(proc.cmdline()),
                                      proc.create_time())
                with proc.oneshot():
                    proc.create_time()
                    cpu = proc.cpu_percent(None)
                    rss = proc.memory_info().rss
                rows.append((pid, used, sm.get(pid), cpu, rss, facts[pid]))
            dev["processes"] = rows
            out.append(dev)
        return out

    assert sum(len(d["processes"]) for d in tick()) == GPUS * PROCS_PER_GPU
    return tick, nv.nvmlShutdown


def nvml_child(ticks: int, runs: int) -> None:
    """In the child with the fake loaded: backend and floor, interleaved run by run so that load
    from elsewhere on the machine hits both alike; prints their µs per run as JSON."""
    floor_tick, floor_close = bench_floor()
    nvml_tick, nvml_clock, nvml_close = bench_nvml()
    floors, nvmls = [], []
    for _ in range(runs):
        floors.append(per_tick_us(floor_tick, None, ticks, 1))
        nvmls.append(per_tick_us(nvml_tick, nvml_clock, ticks, 1))
    floor_close()
    nvml_close()
    print(json.dumps({"floor": floors, "nvml": nvmls}))


def cli_wall(args: list[str], runs: int, exit_code: int = 0) -> list[float]:
    """Wall time of a whole `gputop` process, as an installed package runs: with bytecode
    caches (a PYTHONDONTWRITEBYTECODE in the caller's environment is dropped; one warm-up run
    writes them)."""
    cmd = [sys.executable, "-m", "gputop", *args]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    def once() -> None:
        code = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=env).returncode
        if code != exit_code:
            raise SystemExit(f"{' '.join(args)}: exit {code}, expected {exit_code}")

    once()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        once()
        times.append(time.perf_counter() - start)
    return times


def cli_wall_python(runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=200, help="ticks per run (default 200)")
    parser.add_argument("--runs", type=int, default=9, help="runs; the median is shown")
    parser.add_argument("--cli-runs", type=int, default=7, help="runs of the CLI (default 7)")
    parser.add_argument("--no-cli", action="store_true", help="skip the CLI wall-time runs")
    parser.add_argument("--nvml-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.nvml_child:
        nvml_child(args.ticks, args.runs)
        return 0
    why = cfake.available()
    if why is not None:
        print(f"bench/snapshot.py: {why}", file=sys.stderr)
        return 2

    sim = bench_sim(args.ticks, args.runs)
    with tempfile.TemporaryDirectory(prefix="gputop-snapshot-bench-") as tmp:
        lib = cfake.build(Path(tmp) / "lib")
        with cfake.Node(lib, gpus=GPUS, procs_per_gpu=PROCS_PER_GPU) as node:
            child = subprocess.run([sys.executable, __file__, "--nvml-child", "--ticks",
                                    str(args.ticks), "--runs", str(args.runs)],
                                   env=node.env(), check=True, capture_output=True, text=True)
    runs = json.loads(child.stdout)
    floors, nvmls = runs["floor"], runs["nvml"]
    floor, nvml = statistics.median(floors), statistics.median(nvmls)
    ratio = statistics.median(n / f for n, f in zip(nvmls, floors, strict=True))
    print(f"snapshot, {GPUS} GPUs x {GPUS * PROCS_PER_GPU} processes "
          f"(median of {args.runs} runs x {args.ticks} ticks, 1 s of virtual time per tick)")
    print(f"  simulator (--scenario crowded)       {sim:9.0f} us/snapshot")
    print(f"  NVML backend, pynvml on the C fake   {nvml:9.0f} us/snapshot")
    print(f"  floor: same pynvml calls + psutil    {floor:9.0f} us/snapshot")
    print(f"  NVML backend / floor                 {ratio:9.2f} x   (target <= 1.5; median of per-run ratios)")
    if not args.no_cli:
        bare = cli_wall_python(args.cli_runs)
        print(f"wall time of one process, median of {args.cli_runs} runs (target <= 0.15 s):")
        for label, argv, code in (
                ("gputop snapshot --json --backend sim", ["snapshot", "--json", "--backend", "sim"],
                 0),
                # no NVML here: how soon a script learns that, as from nvidia-smi (exit 12)
                ("gputop snapshot --json (auto, no device: exit 12)", ["snapshot", "--json"], 12)):
            times = cli_wall(argv, args.cli_runs, code)
            print(f"  {label:52s} {statistics.median(times):.3f} s (min {min(times):.3f})")
        print(f"  {'python -c pass (interpreter start-up alone)':52s} {bare:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
