"""The amdgpu clients of a process, from the DRM usage stats in ``/proc/PID/fdinfo``.

Beside the common keys (gputop.backends.drm.fdinfo), amdgpu prints the memory a client's buffers
take (``drm-memory-vram: 544428 KiB``) and the time each engine spent on its work
(``drm-engine-gfx: 39456116802 ns``); see the kernel's Documentation/gpu/drm-usage-stats.rst.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.backends.drm.fdinfo import engines, nanoseconds, parse_pairs, size_bytes

DRIVER = "amdgpu"
# The engines whose time counts towards a process's share of the GPU (its SM% column).
BUSY_ENGINES = ("gfx", "compute")


@dataclass(frozen=True)
class Client:
    """One DRM file of the amdgpu driver, as its fdinfo describes it."""

    pdev: str | None
    client_id: str | None
    vram_bytes: int | None
    engine_ns: dict[str, int] = field(default_factory=dict)


def parse_client(text: str) -> Client | None:
    """The amdgpu client an fdinfo file describes; None for any other file or driver."""
    pairs = parse_pairs(text)
    if pairs.get("drm-driver") != DRIVER:
        return None
    # drm-memory-vram is the key every amdgpu kernel since 5.14 prints; newer ones also print
    # the common drm-resident-vram, which kernels may keep alone in the future
    vram = size_bytes(pairs.get("drm-memory-vram", pairs.get("drm-resident-vram")))
    return Client(pdev=pairs.get("drm-pdev"), client_id=pairs.get("drm-client-id"),
                  vram_bytes=vram, engine_ns=engines(pairs, "drm-engine-", nanoseconds))


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


def usage(clients: list[Client]) -> Usage:
    """One process's clients on one card, summed."""
    out = Usage()
    for client in clients:
        out.add(client)
    return out
