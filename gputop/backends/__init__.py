"""Backend registry and auto-detection.

Backends are imported lazily by name, so a command pays only for the backend it uses.
"""

from __future__ import annotations

import importlib
import shutil

from gputop.backends.base import Backend, BackendOptions, BackendUnavailable

# name -> "module:factory"; each factory takes a BackendOptions.
REGISTRY: dict[str, str] = {
    "nvml": "gputop.backends.nvml:NvmlBackend",
    "npu-smi": "gputop.backends.npu_smi:NpuSmiBackend",
    "sim": "gputop.backends.sim:SimBackend",
    "replay": "gputop.backends.replay:ReplayBackend",
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


def open_backend(name: str, options: BackendOptions) -> Backend:
    """Create and open a backend; ``auto`` tries NVML, then npu-smi, then the simulator."""
    if name != "auto":
        backend = create(name, options)
        backend.open()
        return backend
    passed_over: list[str] = []
    for candidate in _auto_order(options):
        try:
            backend = create(candidate, options)
            backend.open()
        except BackendUnavailable as exc:
            passed_over.append(f"{candidate}: {exc}")
            continue
        if passed_over:
            backend.fallback_reason = "; ".join(passed_over)
        return backend
    raise BackendUnavailable("no backend could start: " + "; ".join(passed_over))


def _auto_order(options: BackendOptions) -> list[str]:
    order = ["nvml"]
    if options.npu_smi or shutil.which("npu-smi"):
        order.append("npu-smi")
    order.append("sim")
    return order
