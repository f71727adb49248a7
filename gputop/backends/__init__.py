"""Backend registry and auto-detection, and the one rule about falling back to the simulator.

Backends are imported lazily by name, so a command pays only for the backend it uses.
"""

from __future__ import annotations

import importlib
import shutil

from gputop.backends.base import Backend, BackendOptions, BackendUnavailable, NoDevice

# name -> "module:factory"; each factory takes a BackendOptions.
REGISTRY: dict[str, str] = {
    "nvml": "gputop.backends.nvml.backend:NvmlBackend",
    "npu-smi": "gputop.backends.npu_smi.backend:NpuSmiBackend",
    "sim": "gputop.backends.sim.backend:SimBackend",
    "replay": "gputop.backends.replay.backend:ReplayBackend",
}
CHOICES = ("auto", *REGISTRY)


def create(name: str, options: BackendOptions) -> Backend:
    """Instantiate (not open) the backend called ``name``."""
    module_name, _, attr = REGISTRY[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("gputop"):
            raise BackendUnavailable(f"the {name} backend is not available in this build") from None
        raise
    return getattr(module, attr)(options)


def open_backend(name: str, options: BackendOptions, *, simulate_if_absent: bool = False
                 ) -> Backend:
    """Create and open a backend; ``auto`` tries NVML, then npu-smi.

    Only a caller that shows a person that its readings are simulated (the dashboard) passes
    ``simulate_if_absent``: then ``auto`` ends at the simulator. Everything a script reads fails
    instead, as nvidia-smi does on a node without a driver: ``NoDevice`` with nvidia-smi's exit
    code for the reason NVML gave (9: driver not loaded, 12: no libnvidia-ml, …)."""
    if name != "auto":
        backend = create(name, options)
        backend.open()
        return backend
    passed_over: list[tuple[str, BackendUnavailable]] = []
    for candidate in _auto_order(options, simulate_if_absent):
        try:
            backend = create(candidate, options)
            backend.open()
        except BackendUnavailable as exc:
            passed_over.append((candidate, exc))
            continue
        if passed_over:
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


def _auto_order(options: BackendOptions, simulate_if_absent: bool) -> list[str]:
    order = ["nvml"]
    if options.npu_smi or shutil.which("npu-smi"):
        order.append("npu-smi")
    if simulate_if_absent:
        order.append("sim")
    return order
