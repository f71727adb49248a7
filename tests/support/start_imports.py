"""What the dashboard's first screen must not load: each module here is loaded by the screen,
key or command that uses it. Held by tests/unit/tui/test_lazy_imports.py and reported by
bench/imports.py."""

from __future__ import annotations

from collections.abc import Iterable

NOT_AT_START = (
    # the other commands, and what only they use
    "gputop.commands.advise", "gputop.commands.agent", "gputop.commands.cluster",
    "gputop.commands.exporter", "gputop.commands.nvidia_smi", "gputop.commands.replay",
    "gputop.commands.snapshot", "gputop.commands.web", "gputop.commands.report",
    "gputop.commands.query",
    "gputop.cluster", "gputop.exporter", "gputop.web", "gputop.smi", "gputop.query",
    "gputop.report",
    # the advisor (its journal is read only where a killed run left one) and its plot
    "gputop.advisor.journal", "gputop.advisor.curve", "gputop.advisor.sweep", "plotext",
    # the screens over the dashboard, opened by their keys
    "gputop.tui.screens.advisor", "gputop.tui.screens.modals", "gputop.tui.screens.process_view",
    "gputop.tui.screens.saturation",
    "gputop.tui.cluster",
    # what only the process view asks of the kernel
    "gputop.host.os_facts",
    # the alert channels' machinery, where no channel is set up, and the journal's JSON until
    # it has an alert to read or write
    "gputop.alerts.notify.channels", "gputop.alerts.notify.payloads", "gputop.core.toolrun",
    "gputop.core.jsonout",
    # libraries and the standard library's heavier parts no first-screen path needs
    "psutil", "ssl", "hashlib", "json", "http", "email", "urllib.request", "statistics",
    # what importlib.resources reads a folder with (gputop/core/datafiles.py reads its own)
    "zipfile", "importlib.readers",
)

# Each backend's own modules: the dashboard loads those of the backend it reads, no other's.
BACKEND_MODULES = {
    "nvml": ("gputop.backends.nvml", "pynvml"),
    "npu-smi": ("gputop.backends.npu_smi",),
    "amd": ("gputop.backends.amd", "gputop.backends.drm"),
    "intel": ("gputop.backends.intel", "gputop.backends.drm"),
    "sim": ("gputop.backends.sim",),
    "replay": ("gputop.backends.replay",),
}


def held_out(backend: str) -> tuple[str, ...]:
    """What the dashboard on ``backend`` must not have loaded at its first screen."""
    own = set(BACKEND_MODULES[backend])
    others = sorted({m for name, modules in BACKEND_MODULES.items() if name != backend
                     for m in modules} - own)
    return (*NOT_AT_START, *others)


def loaded(modules: Iterable[str], held: Iterable[str]) -> list[str]:
    """The entries of ``held`` that ``modules`` (names from sys.modules) hold, or a submodule of."""
    names = set(modules)
    return [m for m in held
            if m in names or any(name.startswith(m + ".") for name in names)]
