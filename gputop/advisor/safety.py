"""Signals into exceptions, and what a write to a device needs.

SIGINT, SIGTERM and SIGHUP (an SSH session dropping) raise ``SignalExit`` in the main thread, so
the sweep unwinds through its ``finally`` and the limits are restored before the process exits
with the conventional status (128 + signal number). Only the first signal raises: a second
Ctrl-C while the limits are being put back is recorded, not allowed to cut the restore short.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

from gputop.backends.base import CAP_POWER_LIMIT, Backend
from gputop.backends.mixed import members
from gputop.core.stop_signals import catch, release

CAP_SYS_ADMIN = 21


class SignalExit(BaseException):
    """A termination signal arrived. BaseException, like KeyboardInterrupt: no ``except
    Exception`` on the way may swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class SignalGuard:
    """While active, the first of SIGINT/SIGTERM/SIGHUP raises SignalExit; later ones are noted."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.armed = False
        self._old: dict[int, object] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
        if self.armed:
            self.armed = False
            raise SignalExit(signum)

    def disarm(self) -> None:
        self.armed = False

    def __enter__(self) -> SignalGuard:
        self._old = catch(self._handle)
        self.armed = bool(self._old)
        return self

    def __exit__(self, *exc: object) -> None:
        self.armed = False
        release(self._old)


def _has_cap_sys_admin() -> bool:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_SYS_ADMIN & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def cannot_set(backend: Backend) -> str | None:
    """Say why ``backend`` sets no power limit at all (it lacks CAP_POWER_LIMIT: Intel, npu-smi,
    amd-smi, an AMD card without power1_cap), in its own words; None where it can try."""
    return None if CAP_POWER_LIMIT in backend.capabilities else backend.limit_refusal()


def missing_privilege(backend: Backend) -> str | None:
    """Why this process cannot change power limits, if that is known before trying (through
    NVML, alone or on a node that also has another vendor's GPUs)."""
    if "nvml" not in members(backend.name):
        return None
    if os.geteuid() == 0 or _has_cap_sys_admin():
        return None
    return ("changing a power limit through NVML needs root or CAP_SYS_ADMIN"
            f" (this process runs as uid {os.geteuid()} without it)")


ROOT_OR_CAP = "run gputop as root (sudo) or grant it CAP_SYS_ADMIN"


def what_is_needed(refusal: BaseException | None) -> str | None:
    """What would let a sweep change limits after ``refusal`` (None: the privilege check found
    it missing before trying), or None where nothing the user runs would: a GPU that does not
    support power limits, or a driver that refuses root too (#27: it said "run as root" to root)."""
    from gputop.backends.base import NoPermission, Unsupported

    if isinstance(refusal, Unsupported):
        return None
    if refusal is not None and (os.geteuid() == 0 or _has_cap_sys_admin()):
        return ("nothing gputop can do: it runs with the privilege and the driver still refuses"
                " (a VM or container that does not let its guests change power limits?)")
    if isinstance(refusal, NoPermission) and refusal.needs is not None:
        return refusal.needs  # the backend knows better than NVML's rule (amdgpu: root's file)
    return ROOT_OR_CAP


RECORDING = "this is a recording: power limits cannot be changed"


def recording(backend: Backend) -> str | None:
    """Say why nothing can be changed where ``backend`` plays a recording (it has a player):
    its GPUs are not here, so no sweep, no restore and no nvidia-smi command applies (#27)."""
    return RECORDING if backend.player is not None else None
