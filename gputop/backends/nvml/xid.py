"""Critical Xid errors through NVML's events: the last Xid each GPU reported (``xid_last``).

NVML delivers Xids only as events: one event set (``nvmlEventSetCreate``) with every GPU
registered for ``nvmlEventTypeXidCriticalError``, drained with ``nvmlEventSetWait_v2`` at
timeout 0 once per tick, so no thread ever blocks in the driver. The value is what
dcgm-exporter's ``DCGM_FI_DEV_XID_ERRORS`` gauge holds: the last Xid seen since start, 0 before
any. A GPU whose registration is refused (NOT_SUPPORTED, a driver without events) reports None,
and is never asked again; so is every GPU when the set itself cannot be made.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Events taken per tick at most: a storm of Xids must not hold the sampler in the driver. The
# rest wait in the driver's queue for the next tick.
MAX_EVENTS_PER_POLL = 64


class XidEvents:
    def __init__(self, nv: Any, absent: tuple[int, ...]) -> None:
        self.nv = nv
        self._absent = absent  # NVML codes meaning "this is not given here"
        self._set: Any = None
        self._unsupported = False  # no event set can be made here: never tried again
        self._refused: set[int] = set()  # GPU indices that refused the registration
        self._registered: set[int] = set()  # GPU indices in the current set
        self._last: dict[int, int] = {}  # GPU index -> last Xid (0: none yet); registered only

    def last(self, index: int) -> int | None:
        return self._last.get(index)

    def poll(self, gpus: Iterable[tuple[int, Any]]) -> None:
        """Register (first time, or after a close) every (index, handle) not yet registered,
        then take the events waiting."""
        if self._unsupported:
            return
        nv = self.nv
        if self._set is None:
            try:
                self._set = nv.nvmlEventSetCreate()
            except nv.NVMLError as exc:
                if exc.value in self._absent:
                    self._unsupported = True
                return
        for index, handle in gpus:
            if index in self._registered or index in self._refused or handle is None:
                continue
            try:
                nv.nvmlDeviceRegisterEvents(handle, nv.nvmlEventTypeXidCriticalError, self._set)
            except nv.NVMLError as exc:
                if exc.value in self._absent:
                    self._refused.add(index)
                continue  # a lost GPU: tried again after it recovers
            self._registered.add(index)
            self._last.setdefault(index, 0)
        for _ in range(MAX_EVENTS_PER_POLL):
            try:
                event = nv.nvmlEventSetWait_v2(self._set, 0)
            except nv.NVMLError:
                # TIMEOUT: nothing waiting. Any other error (a lost GPU) is left for the
                # device's own reads to report; the next tick tries again.
                return
            if not event.eventType & nv.nvmlEventTypeXidCriticalError:
                continue
            try:
                index = nv.nvmlDeviceGetIndex(event.device)
            except nv.NVMLError:
                continue
            if index in self._last:
                self._last[index] = int(event.eventData)

    def close(self) -> None:
        """Free the set (before nvmlShutdown); the last values stay, and the next poll
        registers afresh."""
        if self._set is None:
            return
        try:
            self.nv.nvmlEventSetFree(self._set)
        except self.nv.NVMLError:
            pass
        self._set = None
        self._registered.clear()
