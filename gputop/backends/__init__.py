"""Backend registry and auto-detection, and the one rule about falling back to the simulator.

Each backend's module is imported only when its factory runs, so a command pays only for the
backend it uses.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

from gputop.backends.base import Backend, BackendOptions, BackendUnavailable, NoDevice


def _nvml(options: BackendOptions) -> Backend:
    from gputop.backends.nvml.backend import NvmlBackend

    return NvmlBackend(options)


def _npu_smi(options: BackendOptions) -> Backend:
    from gputop.backends.npu_smi.backend import NpuSmiBackend

    return NpuSmiBackend(options)


def _amd(options: BackendOptions) -> Backend:
    from gputop.backends.amd.backend import AmdBackend

    return AmdBackend(options)


def _intel(options: BackendOptions) -> Backend:
    from gputop.backends.intel.backend import IntelBackend

    return IntelBackend(options)


def _amd_smi(options: BackendOptions) -> Backend:
    from gputop.backends.amd.smi.backend import AmdSmiBackend

    return AmdSmiBackend(options)


def _rocm_smi(options: BackendOptions) -> Backend:
    from gputop.backends.amd.rocm.backend import RocmSmiBackend

    return RocmSmiBackend(options)


def _xpu_smi(options: BackendOptions) -> Backend:
    from gputop.backends.intel.xpu.backend import XpuSmiBackend

    return XpuSmiBackend(options)


def _sim(options: BackendOptions) -> Backend:
    from gputop.backends.sim.backend import SimBackend

    return SimBackend(options)


def _replay(options: BackendOptions) -> Backend:
    from gputop.backends.replay.backend import ReplayBackend

    return ReplayBackend(options)


# name -> factory; each takes a BackendOptions and returns the backend, not yet open.
REGISTRY: dict[str, Callable[[BackendOptions], Backend]] = {
    "nvml": _nvml,
    "npu-smi": _npu_smi,
    "amd": _amd,
    "intel": _intel,
    "amd-smi": _amd_smi,
    "rocm-smi": _rocm_smi,
    "xpu-smi": _xpu_smi,
    "sim": _sim,
    "replay": _replay,
}
CHOICES = ("auto", *REGISTRY)
# A vendor's tool -> the backends tried before it that read the same GPUs: the driver's sysfs,
# and for rocm-smi also amd-smi, ROCm's newer tool.
SAME_GPUS = {"amd-smi": ("amd",), "rocm-smi": ("amd", "amd-smi"), "xpu-smi": ("intel",)}


def create(name: str, options: BackendOptions) -> Backend:
    """Instantiate (not open) the backend called ``name``."""
    return REGISTRY[name](options)


def open_backend(name: str, options: BackendOptions, *, simulate_if_absent: bool = False,
                 one_vendor: bool = False) -> Backend:
    """Create and open a backend; ``auto`` tries NVML, then npu-smi, then AMD's sysfs, then
    amd-smi (for the node whose sysfs gputop cannot read: a container without the host's /sys),
    then rocm-smi (the same, on a node whose ROCm predates amd-smi), then Intel's sysfs, then
    xpu-smi (where it is on PATH: Intel's data-center GPUs, whose sysfs the Intel backend may not
    read, as in a container without the host's /sys), and reads every one that opens: a node with GPUs of two vendors shows both, as one node
    (gputop.backends.mixed). ``one_vendor``: the first that opens alone, as nvidia-smi sees a
    node (query mode and the nvidia-smi faces: a script logging an NVIDIA workstation's GPUs gets
    nvidia-smi's rows and indices, not its Intel iGPU as GPU 1).

    Only a caller that shows a person that its readings are simulated (the dashboard) passes
    ``simulate_if_absent``: then ``auto`` ends at the simulator where no real backend opens.
    Everything a script reads fails instead, as nvidia-smi does on a node without a driver:
    ``NoDevice`` with nvidia-smi's exit code for the reason NVML gave (9: driver not loaded,
    12: no libnvidia-ml, …)."""
    if name != "auto":
        backend = create(name, options)
        backend.open()
        return backend
    passed_over: list[tuple[str, BackendUnavailable]] = []
    opened: list[Backend] = []
    try:
        for candidate in _auto_order(options):
            if {b.name for b in opened} & set(SAME_GPUS.get(candidate, ())):
                continue  # a vendor tool reads GPUs that sysfs or another tool answered for
            try:
                backend = create(candidate, options)
                backend.open()
            except BackendUnavailable as exc:
                passed_over.append((candidate, exc))
                continue
            opened.append(backend)
            if one_vendor:
                break
        if len(opened) > 1:
            from gputop.backends.mixed import MixedBackend

            mixed = MixedBackend(opened)
            mixed.open()
            return mixed
    except BaseException:
        for backend in opened:
            backend.close()
        raise
    if opened:
        return opened[0]
    if simulate_if_absent:
        backend = create("sim", options)
        backend.open()
        # only the simulator stands in for what was passed over: a real backend found after
        # another (an AMD card on a node without NVML) is no fallback to warn of
        backend.fallback_reason = _reasons(passed_over)
        return backend
    raise NoDevice("no GPU or NPU answered: " + _reasons(passed_over),
                   exit_code=passed_over[0][1].exit_code)


def _reasons(passed_over: list[tuple[str, BackendUnavailable]]) -> str:
    parts = []
    for candidate, exc in passed_over:
        text = str(exc)
        # The NVML backend's messages start with "NVML:" already, most of npu-smi's with "npu-smi".
        parts.append(text if text.lower().startswith(candidate) else f"{candidate}: {text}")
    return "; ".join(parts)


def _auto_order(options: BackendOptions) -> list[str]:
    """The real backends ``auto`` tries, in order; only those a node may have: a tool on PATH,
    a card of the driver (nvml always: loading the library is how it is found)."""
    order = ["nvml"]
    if options.npu_smi or shutil.which("npu-smi"):
        order.append("npu-smi")
    if options.sysfs_root or _amd_present():
        order.append("amd")
    if shutil.which("amd-smi"):
        # only where sysfs found no card: where it did, it answered first, with no tool to run
        order.append("amd-smi")
    if shutil.which("rocm-smi"):
        # only where neither sysfs nor amd-smi answered: ROCm before amd-smi has rocm-smi alone
        order.append("rocm-smi")
    if _intel_present(options.sysfs_root or "/"):
        order.append("intel")
    if shutil.which("xpu-smi"):
        # only where sysfs found no card: where it did, it answered first, with no tool to run
        order.append("xpu-smi")
    return order


def _amd_present() -> bool:
    """Whether this node has an amdgpu card: a few directory reads, no file of a device opened.
    Where it has none, auto-detection does not try AMD nor name it in its reason."""
    from gputop.backends.amd.fdinfo import DRIVER
    from gputop.backends.drm.cards import present

    return present("/", (DRIVER,))


def _intel_present(root: str) -> bool:
    """Whether ``root`` holds a card on i915 or xe: a few directory reads. Where it has none,
    auto-detection does not try Intel nor name it in its reason, even under ``--sysfs-root``
    (which names a tree that may hold AMD cards alone)."""
    from gputop.backends.drm.cards import present
    from gputop.backends.intel.fdinfo import DRIVERS

    return present(root, DRIVERS)
