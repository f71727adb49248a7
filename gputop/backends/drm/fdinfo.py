"""The DRM clients of every process, from the DRM usage stats in ``/proc/PID/fdinfo``.

The kernel (5.14 and later) prints, for each open DRM file, ``drm-driver``, ``drm-pdev`` (the
card's PCI address), ``drm-client-id`` (one per DRM file however many descriptors share it), the
memory its buffers take and the time each engine spent on its work; see the kernel's
Documentation/gpu/drm-usage-stats.rst. What each driver prints beyond the common keys is read by
its backend (a ``parse`` function given to `scan`). A client shared by several descriptors or
processes is counted once, for the first process found holding it.

Only descriptors that are links into ``/dev/dri/`` are read, so a tick costs one readlink per open
file and one small read per DRM file. The descriptors of another user's process are readable only
with root or CAP_SYS_PTRACE: those processes are counted as not seen, never guessed at.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from gputop.backends.drm.files import Files

DRI_PREFIX = "/dev/dri/"
_UNITS = {"": 1, "B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}


class Client(Protocol):
    """What `scan` needs of a parsed client: which card and which DRM file it is."""

    @property
    def pdev(self) -> str | None: ...

    @property
    def client_id(self) -> str | None: ...


C = TypeVar("C", bound=Client)


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


def nanoseconds(value: str) -> int | None:
    """An engine time ("39456116802 ns"); None where it is not one."""
    number, _, unit = value.partition(" ")
    if unit.strip() not in ("", "ns"):
        return None
    try:
        return int(number)
    except ValueError:
        return None


def count(value: str | None) -> int | None:
    """A bare counter ("drm-cycles-rcs: 28257900"); None where it is not one."""
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


CAPACITY = "drm-engine-capacity-"


def engines(pairs: dict[str, str], prefix: str, parse: Callable[[str], int | None]
            ) -> dict[str, int]:
    """``{engine: value}`` of the keys ``<prefix><engine>`` ("drm-engine-", "drm-cycles-",
    "drm-engine-capacity-"); ``drm-engine-*`` leaves out the capacities (a count of engines,
    not a time)."""
    out = {}
    for key, value in pairs.items():
        if key.startswith(prefix) and (prefix == CAPACITY or not key.startswith(CAPACITY)):
            number = parse(value)
            if number is not None:
                out[key[len(prefix):]] = number
    return out


@dataclass
class Scan(Generic[C]):
    """One pass over ``/proc``: per card (PCI address), per PID, its clients; and how many
    processes could not be looked into."""

    by_card: dict[str, dict[int, list[C]]] = field(default_factory=dict)
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


def scan(proc: str, files: Files, bus_ids: Iterable[str],
         parse: Callable[[str], C | None]) -> Scan[C]:
    """The clients ``parse`` recognises (None for another driver's) of every process under
    ``proc`` (a /proc), for the cards at ``bus_ids``; a client with no ``drm-pdev`` belongs to
    the only card, where there is one."""
    cards = set(bus_ids)
    only = next(iter(cards)) if len(cards) == 1 else None
    out: Scan[C] = Scan(by_card={bus: {} for bus in cards})
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
            client = parse(text) if text else None
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
            out.by_card[bus].setdefault(pid, []).append(client)
    return out
