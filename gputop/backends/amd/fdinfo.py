"""The processes using an amdgpu card, from the DRM usage stats in ``/proc/PID/fdinfo``.

The kernel (5.14 and later) prints, for each open DRM file, ``drm-driver``, ``drm-pdev`` (the
card's PCI address), ``drm-client-id`` (one per DRM file however many descriptors share it), the
memory its buffers take (``drm-memory-vram: 544428 KiB``) and the time each engine spent on its
work (``drm-engine-gfx: 39456116802 ns``); see the kernel's Documentation/gpu/drm-usage-stats.rst.
A client shared by several descriptors or processes is counted once, for the first process
found holding it.

Only descriptors that are links into ``/dev/dri/`` are read, so a tick costs one readlink per open
file and one small read per DRM file. The descriptors of another user's process are readable only
with root or CAP_SYS_PTRACE: those processes are counted as not seen, never guessed at.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from gputop.backends.amd.files import Files

DRIVER = "amdgpu"
DRI_PREFIX = "/dev/dri/"
# The engines whose time counts towards a process's share of the GPU (its SM% column).
BUSY_ENGINES = ("gfx", "compute")
_UNITS = {"": 1, "B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}
NS_PER_S = 1e9


@dataclass(frozen=True)
class Client:
    """One DRM file of the amdgpu driver, as its fdinfo describes it."""

    pdev: str | None
    client_id: str | None
    vram_bytes: int | None
    engine_ns: dict[str, int] = field(default_factory=dict)


def parse_pairs(text: str) -> dict[str, str]:
    """``key: value`` lines; whitespace after the colon (a tab, or " \t") is not the value's."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def size_bytes(value: str | None) -> int | None:
    """A memory figure ("544428 KiB", "22 MiB", "0") in bytes; None where it is not one."""
    if value is None:
        return None
    number, _, unit = value.partition(" ")
    scale = _UNITS.get(unit.strip())
    try:
        return int(number) * scale if scale is not None else None
    except ValueError:
        return None


def _nanoseconds(value: str) -> int | None:
    number, _, unit = value.partition(" ")
    if unit.strip() not in ("", "ns"):
        return None
    try:
        return int(number)
    except ValueError:
        return None


def parse_client(text: str) -> Client | None:
    """The amdgpu client an fdinfo file describes; None for any other file or driver."""
    pairs = parse_pairs(text)
    if pairs.get("drm-driver") != DRIVER:
        return None
    # drm-memory-vram is the key every amdgpu kernel since 5.14 prints; newer ones also print
    # the common drm-resident-vram, which kernels may keep alone in the future
    vram = size_bytes(pairs.get("drm-memory-vram", pairs.get("drm-resident-vram")))
    engines = {}
    for key, value in pairs.items():
        if key.startswith("drm-engine-") and not key.startswith("drm-engine-capacity-"):
            ns = _nanoseconds(value)
            if ns is not None:
                engines[key[len("drm-engine-"):]] = ns
    return Client(pdev=pairs.get("drm-pdev"), client_id=pairs.get("drm-client-id"),
                  vram_bytes=vram, engine_ns=engines)


@dataclass
class Usage:
    """What one process holds on one card: its clients' VRAM and busy engine time, summed."""

    vram_bytes: int | None = None
    busy_ns: int | None = None

    def add(self, client: Client) -> None:
        if client.vram_bytes is not None:
            self.vram_bytes = (self.vram_bytes or 0) + client.vram_bytes
        busy = [client.engine_ns[e] for e in BUSY_ENGINES if e in client.engine_ns]
        if busy:
            self.busy_ns = (self.busy_ns or 0) + sum(busy)


@dataclass
class Scan:
    """One pass over ``/proc``: per card (PCI address), per PID, its usage; and how many
    processes could not be looked into."""

    by_card: dict[str, dict[int, Usage]] = field(default_factory=dict)
    denied: int = 0


def _pids(proc: str) -> list[int]:
    try:
        return sorted(int(n) for n in os.listdir(proc) if n.isdigit())
    except OSError:
        return []


def _drm_fds(fd_dir: str) -> list[str]:
    """The descriptors in ``fd_dir`` that are DRM files. Raises PermissionError."""
    out = []
    for name in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, name))
        except OSError:  # closed meanwhile
            continue
        if target.startswith(DRI_PREFIX):
            out.append(name)
    return out


def scan(proc: str, files: Files, bus_ids: Iterable[str]) -> Scan:
    """The amdgpu clients of every process under ``proc`` (a /proc), for the cards at
    ``bus_ids``; a client with no ``drm-pdev`` belongs to the only card, where there is one."""
    cards = set(bus_ids)
    only = next(iter(cards)) if len(cards) == 1 else None
    out = Scan(by_card={bus: {} for bus in cards})
    seen: set[tuple[str, str]] = set()
    for pid in _pids(proc):
        base = os.path.join(proc, str(pid))
        try:
            fds = _drm_fds(os.path.join(base, "fd"))
        except PermissionError:
            out.denied += 1
            continue
        except OSError:  # gone, or a kernel thread
            continue
        for fd in fds:
            text = files.text(os.path.join(base, "fdinfo", fd))
            client = parse_client(text) if text else None
            if client is None:
                continue
            bus = client.pdev or only
            if bus not in cards:
                continue
            if client.client_id is not None:
                key = (bus, client.client_id)
                if key in seen:
                    continue  # a descriptor duplicated, or inherited by a child
                seen.add(key)
            out.by_card[bus].setdefault(pid, Usage()).add(client)
    return out


class EngineShares:
    """Each process's share of its card's time, from its busy engine time between two scans.

    The kernel lets a counter go back briefly ("stay with the larger previous value until a
    monotonic update is seen"), so a lower reading keeps the larger one. A process first seen has
    no share yet (None), not 0."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, int], tuple[int, float]] = {}

    def share(self, bus: str, pid: int, busy_ns: int | None, now: float) -> float | None:
        key = (bus, pid)
        if busy_ns is None:
            self._last.pop(key, None)
            return None
        last = self._last.get(key)
        if last is None:
            self._last[key] = (busy_ns, now)
            return None
        then_ns, then = last
        if now <= then:
            return None
        busy_ns = max(busy_ns, then_ns)
        self._last[key] = (busy_ns, now)
        pct = 100.0 * (busy_ns - then_ns) / ((now - then) * NS_PER_S)
        return round(min(100.0, pct), 1)

    def prune(self, live: Iterable[tuple[str, int]]) -> None:
        keep = set(live)
        for key in [k for k in self._last if k not in keep]:
            del self._last[key]
