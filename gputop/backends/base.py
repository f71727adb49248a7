"""The backend contract: turn a device library or a tool's output into the model.

A backend never imports a consumer. Consumers never call a device library directly.
"""

from __future__ import annotations

import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gputop.backends.controls import ReplayControls
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.errors import GputopError
from gputop.core.model import NodeInfo, Snapshot


class BackendError(GputopError):
    """The backend could not start or read the node at all."""


class BackendUnavailable(BackendError):
    """This backend cannot run here (no library, no tool, no device).

    ``exit_code``: nvidia-smi's own exit status for the reason, where it has one (its man page,
    RETURN VALUE: 9 driver not loaded, 12 NVML library not found, …), so that a script written
    for nvidia-smi sees the status it expects."""

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class NoDevice(BackendUnavailable):
    """``--backend auto`` found no device, and the caller may not fall back to the simulator."""


class NoPermission(BackendError):
    """The caller lacks the privilege for a write (power limits need root / CAP_SYS_ADMIN).

    ``needs``: what would let the write through, in words, where the backend knows better than
    NVML's "root or CAP_SYS_ADMIN" (amdgpu's power1_cap is root's file: the capability does not
    help); None for that default."""

    def __init__(self, message: str, needs: str | None = None) -> None:
        super().__init__(message)
        self.needs = needs


class Unsupported(BackendError):
    """The device or backend does not support this operation."""


class Clock:
    """Real time. The simulator substitutes a virtual clock that can run faster."""

    sleeps = True  # waits sleep on the OS timer (a test's hand-advanced clock returns at once)

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Sleep up to ``seconds`` of this clock's time; True if ``event`` was set meanwhile."""
        return event.wait(max(0.0, seconds))


REAL_CLOCK = Clock()

# Capability names a backend may declare.
CAP_PROCESSES = "processes"
CAP_SATURATION = "saturation"  # measured (GPM) or simulated SM-level activity
CAP_POWER_LIMIT = "set_power_limit"
CAP_ENERGY = "energy"


@dataclass(frozen=True)
class BackendOptions:
    """Everything a backend may be configured with; each backend reads what concerns it."""

    scenario: str = "training"
    seed: int = 0
    sim_speed: float = 1.0
    sim_state: str | None = None
    npu_smi: str | None = None
    replay: str | None = None
    # The folder the sysfs backends (AMD, Intel) read sys/class/drm and proc under ("/" when
    # None): a container's mount of the host's, or a captured tree in the tests.
    sysfs_root: str | None = None


class Backend(ABC):
    name: str = "?"
    capabilities: frozenset[str] = frozenset()
    clock: Clock = REAL_CLOCK
    # Set by auto-detection when it passed over better backends: why (shown to the user).
    fallback_reason: str | None = None
    # The controls of a replayed log (the replay backend's player, once open); None for a
    # live device, whose samples a view cannot pause, step or seek.
    player: ReplayControls | None = None

    def open(self) -> None:  # noqa: B027 - optional hook
        """Acquire handles and read static facts. Raise BackendUnavailable if it cannot run."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what open() acquired."""

    def __enter__(self) -> Backend:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def info(self) -> NodeInfo:
        """Static node and device facts (read once in open())."""

    @abstractmethod
    def sample(self, devices: Sequence[int] | None = None, *,
               wants: Wants | None = EVERYTHING) -> Snapshot:
        """One snapshot of the given device indices (all when None).

        ``wants`` (gputop.core.budget) says which attributes the consumers read and how fresh: a
        backend may leave the others None (empty for ``processes``) instead of paying for them.
        Process lists and GPM are the costliest part of a sample, and `-lms 10` logging samples
        a hundred times a second; on a real driver every call is an ioctl.
        """

    def notes(self) -> tuple[str, ...]:
        """Say what this backend could not read for lack of permission, one line each (empty
        when nothing was refused), so that a command can tell the user once what needs more."""
        return ()

    def set_power_limit(self, device: int, watts: float) -> None:
        raise Unsupported(self.limit_refusal())

    def limit_refusal(self) -> str:
        """Say why this backend sets no power limit (where it lacks CAP_POWER_LIMIT), in a
        phrase the advisor shows as its reason for not sweeping."""
        return f"the {self.name} backend cannot set power limits"

    def limit_commands(self, limits: Mapping[int, float]) -> list[str]:
        """Return the shell commands that set ``limits`` (watts by device index) by hand: what
        the advisor offers a user who lacks the privilege, or to apply a recommendation.
        nvidia-smi's by default (NVML, the simulator); empty where no command would."""
        return nvidia_smi_commands(limits)


def nvidia_smi_commands(limits: Mapping[int, float]) -> list[str]:
    """Return the equivalent nvidia-smi commands, one per distinct limit."""
    by_value: dict[float, list[int]] = {}
    for i, w in sorted(limits.items()):
        by_value.setdefault(round(w, 2), []).append(i)
    return [f"sudo nvidia-smi -i {','.join(map(str, ids))} -pl {w:g}"
            for w, ids in sorted(by_value.items(), reverse=True)]


def hostname() -> str:
    return socket.gethostname()
