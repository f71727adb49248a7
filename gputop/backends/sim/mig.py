"""MIG on the simulated H100 80GB: the profiles, where the driver places them, and their ids.

Figures are the driver's, as real captures show them on an H100 80GB HBM3:
- SM counts from ``nvidia-smi mig -lgip`` (1g 16, 2g 32, 3g 60, the whole GPU 132);
- memory per MIG device in MiB from the ``MIG devices`` table of ``nvidia-smi`` (9984, 20096,
  40320), and what an empty instance already uses there (12, 25, 37 MiB). ``1g.10gb+me`` has the
  same memory and SMs as ``1g.10gb`` (equal rows in ``-lgip``) plus the media engines.
Only profiles with a captured memory figure are offered: a scenario naming another is refused.

GPU instance ids follow the placements the driver uses (a 3g instance at memory slices 4-7 is
GI 2, a 2g at 0-1 is GI 3, a 1g at slice s is GI 7+s: the capture shows 3g=2, 2g=3, 1g=9,10);
each GPU instance holds one compute instance (CI 0) spanning it, as ``-cgi … -C`` makes.
MIG device indexes follow the GI ids, as ``nvidia-smi`` numbers them.
"""

from __future__ import annotations

from dataclasses import dataclass

FULL_GPU_SMS = 132


@dataclass(frozen=True)
class Profile:
    name: str
    sm_count: int
    memory_total_mib: float
    empty_used_mib: float  # what the driver holds in an instance with no process
    # (GI id, first memory slice, slices) for each placement, in the order the driver tries them
    placements: tuple[tuple[int, int, int], ...]

    @property
    def compute_share(self) -> float:
        return self.sm_count / FULL_GPU_SMS


_ONE_G = tuple((7 + s, s, 1) for s in range(7))
PROFILES: dict[str, Profile] = {
    p.name: p for p in (
        Profile("1g.10gb", 16, 9984, 12, _ONE_G),
        Profile("1g.10gb+me", 16, 9984, 12, _ONE_G),
        Profile("2g.20gb", 32, 20096, 25, ((3, 0, 2), (4, 2, 2), (5, 4, 2))),
        Profile("3g.40gb", 60, 40320, 37, ((2, 4, 4), (1, 0, 4))),
    )
}


@dataclass(frozen=True)
class Slot:
    """One MIG device of a layout."""

    index: int
    profile: Profile
    gpu_instance_id: int
    compute_instance_id: int = 0


def place(profiles: list[str] | tuple[str, ...]) -> tuple[Slot, ...]:
    """The MIG devices a GPU split into ``profiles`` (created in that order) ends up with.

    Raises ValueError naming the problem for an unknown profile or one with no free placement
    left (the placements cap each profile's count as ``-lgip`` does: 7 1g, 3 2g, 2 3g)."""
    taken: set[int] = set()
    placed: list[tuple[int, Profile]] = []
    for name in profiles:
        profile = PROFILES.get(name)
        if profile is None:
            raise ValueError(f"unknown MIG profile {name!r} (known: {', '.join(PROFILES)})")
        for gi, first, count in profile.placements:
            slices = set(range(first, first + count))
            if not slices & taken:
                taken |= slices
                placed.append((gi, profile))
                break
        else:
            raise ValueError(f"no room left for a {name} instance after {placed[-1][1].name}"
                             if placed else f"no room for a {name} instance")
    placed.sort(key=lambda item: item[0])
    return tuple(Slot(k, profile, gi) for k, (gi, profile) in enumerate(placed))
