"""Critical Xid errors through NVML's events: each Xid as it comes (``xid_events``) and the last
Xid each GPU reported (``xid_last``).

NVML delivers Xids only as events: one event set (``nvmlEventSetCreate``) with every GPU
registered for ``nvmlEventTypeXidCriticalError``, drained with ``nvmlEventSetWait_v2`` at
timeout 0 once per tick, so no thread ever blocks in the driver. ``xid_last`` is what
dcgm-exporter's ``DCGM_FI_DEV_XID_ERRORS`` gauge holds: the last Xid seen since start, 0 before
any. Each Xid drained also waits, with the time it was drained (the event carries none), until
the next sample of its GPU takes it. A GPU whose registration is refused (NOT_SUPPORTED, a
driver without events) reports None, and is never asked again; so is every GPU when the set
itself cannot be made. The driver queues no event for a set made after it: an Xid raised before
gputop's first poll is never seen.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable
from typing import Any

from gputop.core.model import XidEvent

# Events taken per tick at most: a storm of Xids must not hold the sampler in the driver. The
# rest wait in the driver's queue for the next tick.
MAX_EVENTS_PER_POLL = 64
# Events kept per GPU for its next sample: a GPU left out of the samples (``--id``) must not
# grow them without bound. The oldest go first.
MAX_PENDING = 64


class XidEvents:
    def __init__(self, nv: Any, absent: tuple[int, ...]) -> None:
        self.nv = nv
        self._absent = absent  # NVML codes meaning "this is not given here"
        self._set: Any = None
        self._unsupported = False  # no event set can be made here: never tried again
        self._refused: set[int] = set()  # GPU indices that refused the registration
        self._registered: set[int] = set()  # GPU indices in the current set
        self._last: dict[int, int] = {}  # GPU index -> last Xid (0: none yet); registered only
        self._pending: dict[int, list[XidEvent]] = {}  # drained, not yet taken by a sample
        self._handles: dict[int, Any] = {}  # GPU index -> its handle, as registered

    def last(self, index: int) -> int | None:
        return self._last.get(index)

    def take(self, index: int) -> tuple[XidEvent, ...]:
        """The events GPU ``index`` reported since the last take, oldest first."""
        return tuple(self._pending.pop(index, ()))

    def poll(self, gpus: Iterable[tuple[int, Any]], now: Callable[[], float],
             keep: bool = True) -> None:
        """Register (first time, or after a close) every (index, handle) not yet registered,
        then take the events waiting, each stamped ``now()`` (epoch seconds) and kept for
        ``take`` where ``keep`` (a consumer wants them), else only counted in ``last``."""
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
            self._handles[index] = handle
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
            found = self._index(event.device)
            if found is None:
                continue
            index = found
            if index in self._last:
                code = int(event.eventData)
                self._last[index] = code
                if keep:
                    pending = self._pending.setdefault(index, [])
                    pending.append(XidEvent(index, code, now()))
                    del pending[:-MAX_PENDING]

    def _index(self, handle: Any) -> int | None:
        """The index of the GPU an event names. The GPU an Xid 79 took off the bus answers no
        call (GPU_IS_LOST), so the handle is matched to the ones registered instead."""
        try:
            return int(self.nv.nvmlDeviceGetIndex(handle))
        except self.nv.NVMLError:
            key = _handle_key(handle)
            return next((i for i, h in self._handles.items() if _handle_key(h) == key), None)

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


def _handle_key(handle: Any) -> Any:
    """What two handles of one GPU share: the address a ctypes handle points at (each event
    brings its own pointer object), else the handle itself (a test's fake)."""
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (TypeError, ctypes.ArgumentError):
        return handle
