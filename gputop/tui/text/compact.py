"""The compact, gpustat-like text view of one snapshot (no Textual: it must start fast).

Every name in it (host, device, user, process) and every message is shown through
``gputop.core.visible``: a process named ``ESC ]0;…`` is printed as ``^[]0;…``, never obeyed."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TextIO

from gputop.analysis.jobs import gpu_list
from gputop.core.formatting import GONE, num
from gputop.core.model import Device, Hint, Snapshot
from gputop.core.visible import visible
from gputop.tui.text.no_color import no_color

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_RED = "\x1b[31m"
_GREEN = "\x1b[32m"
_YELLOW = "\x1b[33m"
_CYAN = "\x1b[36m"
_MAGENTA = "\x1b[35m"
_DIM = "\x1b[2m"


def use_color(mode: str, stream: TextIO) -> bool:
    if mode == "always":
        return True
    if mode == "never" or no_color():
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def _level(pct: float | None) -> str:
    if pct is None:
        return _DIM
    return _RED if pct >= 90 else _YELLOW if pct >= 50 else _GREEN


def device_line(dev: Device, color: bool) -> str:
    def c(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if color else text

    head = f"[{dev.index}] {visible(dev.name or 'unknown device'):<24.24}"
    if dev.status != "ok":
        reason = f" ({visible(dev.status_reason)})" if dev.status_reason else ""
        return f"{c(_CYAN, head)} | {c(_RED + _BOLD, dev.status.upper() + reason)}"
    temp = c(_level(None if dev.temperature_c is None else dev.temperature_c + 10),
             num(dev.temperature_c, ".0f", "°C"))
    util = c(_level(dev.utilization_gpu_pct), num(dev.utilization_gpu_pct, "3.0f", " %"))
    mem = c(_level(dev.memory_pct),
            f"{num(dev.memory_used_mib, '5.0f')} / {num(dev.memory_total_mib, '5.0f')} MiB")
    power = c(_MAGENTA, f"{num(dev.power_draw_w, '3.0f')} / {num(dev.power_limit_w, '3.0f')} W")
    procs = " ".join(
        f"{visible(p.user or '?')}:{visible(GONE if p.gone else p.name or '?')}/{p.pid}"
        f"({num(p.gpu_memory_mib, '.0f', 'M')})"
        for p in dev.processes
    )
    line = f"{c(_CYAN, head)} | {temp:>5} {util} | {mem} | {power}"
    # a replayed log, or an idle GPU, has no processes: no empty column after the last bar
    return f"{line} | {procs}" if procs else line


def render_text(snap: Snapshot, color: bool = False) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snap.time))
    backend = snap.backend
    if backend == "sim":
        backend = f"{_BOLD}{_YELLOW}SIMULATED{_RESET}" if color else "SIMULATED"
    driver = f"  driver {visible(snap.driver_version)}" if snap.driver_version else ""
    lines = [f"{visible(snap.host)}  {stamp}{driver}  backend: {backend}"]
    lines += [device_line(d, color) for d in snap.devices]
    lines += [f"  {where}: {code} ({severity}) - {visible(message)}"
              for where, code, severity, message in grouped_hints(snap.hints)]
    return "\n".join(lines) + "\n"


def grouped_hints(hints: Sequence[Hint]) -> list[tuple[str, str, str, str]]:
    """(where, code, severity, message) per line: hints that say the same of several GPUs
    (eight GPUs held at one power limit) are one line, "GPUs 0–7", "each GPU …" (#27)."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    order: list[tuple[str, str, str]] = []
    out: list[tuple[str, str, str, str]] = []
    for h in hints:
        if h.device is None or h.gpu_instance_id is not None:
            out.append(("node" if h.device is None else f"GPU {h.device}", h.code, h.severity,
                        h.message))
            continue
        key = (h.code, h.severity, h.message.replace(f"GPU {h.device}", "\0"))
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append(h.device)
    for key in order:
        code, severity, message = key
        gpus = groups[key]
        if len(gpus) == 1:
            out.append((f"GPU {gpus[0]}", code, severity, message.replace("\0", f"GPU {gpus[0]}")))
        else:
            out.append((f"GPUs {gpu_list(gpus)}", code, severity,
                        message.replace("\0", "each GPU", 1).replace("\0", "its GPU")))
    return out
