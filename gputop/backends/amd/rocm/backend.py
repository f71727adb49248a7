"""The rocm-smi backend: AMD GPUs read by running ROCm's older `rocm-smi … --json`.

For a node where rocm-smi is the only AMD tool (ROCm before amd-smi, as on many clusters) and
amdgpu's sysfs is not readable to gputop (hidden from a container). One call prints everything,
identity and readings: it is run with the flags Telegraf's ``amd_rocm_smi`` plugin runs, whose
output the captures of tests/fixtures/amd are. rocm-smi is a Python program that takes a second
or more per call, so after open() no call runs on a consumer's thread: a worker thread re-runs it
and sample() returns at once with the last good readings and their age (``Device.data_age_s``),
as the amd-smi backend does; each card's identity is the first call's.

Every call is bounded by the shared runner (gputop/backends/smi_runner.py): a timeout, an output
cap, its process group killed on every way out. A call that failed makes every GPU's status
"error" from the next sample on, its reason naming the failure; the last good readings stay.
What is read from which key, with which permission: docs/backends.md.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gputop.backends.amd.rocm import mapping, output
from gputop.backends.base import (
    REAL_CLOCK,
    Backend,
    BackendError,
    BackendOptions,
    BackendUnavailable,
    Clock,
    hostname,
)
from gputop.backends.smi_runner import SmiRunner, find_smi
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, DeviceInfo, NodeInfo, Snapshot

TOOL = "rocm-smi"
VENDOR = "amd"
# Telegraf's amd_rocm_smi flags (plugins/inputs/amd_rocm_smi), the captures' own: each key read
# has been seen in a real answer to exactly this call.
ARGS = ("-o", "-l", "-m", "-M", "-g", "-c", "-t", "-u", "-i", "-f", "-p", "-P", "-s", "-S", "-v",
        "--showreplaycount", "--showpids", "--showdriverversion", "--showmemvendor",
        "--showfwinfo", "--showproductname", "--showserial", "--showuniqueid", "--showbus",
        "--showpendingpages", "--showpagesinfo", "--showmeminfo", "all", "--showretiredpages",
        "--showunreservablepages", "--showmemuse", "--showvoltage", "--showtopo",
        "--showtopoweight", "--showtopohops", "--showtopotype", "--showtoponuma", "--json")
WHAT = f"`{TOOL} … --json`"  # how errors name the call (its 38 flags would not fit a line)
DEFAULT_TIMEOUT_S = 30.0  # the topology flags walk every pair of GPUs of an 8-GPU node
TIMEOUT_ENV = "GPUTOP_ROCM_SMI_TIMEOUT"
REFRESH_S = 1.0  # how often rocm-smi is re-run (back to back when it is slower)
MIN_GAP_S = 0.2  # rest between two calls even when rocm-smi is slower than REFRESH_S


def timeout_from_env(default: float = DEFAULT_TIMEOUT_S) -> float:
    """``GPUTOP_ROCM_SMI_TIMEOUT``, checked against its documented range (gputop.core.bounds)."""
    from gputop.core.bounds import ROCM_SMI_TIMEOUT

    assert ROCM_SMI_TIMEOUT.name == TIMEOUT_ENV
    return float(ROCM_SMI_TIMEOUT.from_env(os.environ, default))


@dataclass(frozen=True)
class _Card:
    number: int  # the DRM card number rocm-smi keys it by ("card3")
    identity: mapping.Identity


class RocmSmiBackend(Backend):
    name = "rocm-smi"
    capabilities: frozenset[str] = frozenset()

    def __init__(self, options: BackendOptions, *, refresh_s: float = REFRESH_S,
                 timeout_s: float | None = None, clock: Clock = REAL_CLOCK) -> None:
        self.options = options
        self.refresh_s = refresh_s
        self.timeout_s = timeout_s
        self.clock = clock
        self._runner: SmiRunner | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._info: NodeInfo | None = None
        self._cards: list[_Card] = []
        self._readings: dict[int, dict[str, Any]] = {}
        self._readings_at: float | None = None
        self._error: BaseException | None = None
        self._wanted = True
        self._notes = output.Notes()
        self.reads = 0  # rounds run by the worker (tests wait on it)

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        executable = find_smi(TOOL, None)
        self.timeout_s = self.timeout_s if self.timeout_s is not None else timeout_from_env()
        self._runner = SmiRunner(TOOL, executable, self.timeout_s)
        try:
            first = self._read()
        except BackendError as exc:
            self._runner.close()
            raise BackendUnavailable(f"rocm-smi is present but unusable: {exc}") from exc
        if not first.cards:
            self._runner.close()
            raise BackendUnavailable("rocm-smi lists no GPUs")
        self._cards = [_Card(n, mapping.identity(card)) for n, card in first.cards.items()]
        self._store(self._readings_of(first))
        infos = []
        for i, card in enumerate(self._cards):
            got = self._readings.get(card.number, {})
            infos.append(DeviceInfo(index=i, name=card.identity.name, vendor=VENDOR,
                                    pci_bus_id=card.identity.bus_id,
                                    memory_total_mib=got.get("memory_total_mib")))
        self._info = NodeInfo(hostname(), self.name, mapping.driver_version(first.system), None,
                              tuple(infos))
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="gputop-rocm-smi", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._runner is not None:
            self._runner.close()  # kills a call in flight, so the worker ends at once
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None

    def info(self) -> NodeInfo:
        if self._info is None:
            raise BackendError("rocm-smi backend not open")
        return self._info

    def notes(self) -> tuple[str, ...]:
        with self._lock:
            return self._notes.lines()

    # ------------------------------------------------------------------ the calls
    def _read(self) -> output.Output:
        assert self._runner is not None
        found = output.load(self._runner.run(*ARGS), WHAT)
        with self._lock:
            self._notes.add(found)
        return found

    @staticmethod
    def _readings_of(found: output.Output) -> dict[int, dict[str, Any]]:
        return {n: mapping.readings(card) for n, card in found.cards.items()}

    def _store(self, readings: Mapping[int, dict[str, Any]] | None,
               error: BaseException | None = None) -> None:
        now = self.clock.monotonic()
        with self._lock:
            if readings is not None:
                self._readings, self._readings_at = dict(readings), now
            self._error = error
            self.reads += 1

    def _round(self) -> None:
        """Run rocm-smi where a consumer wants a figure it prints; store the readings, or the
        failure."""
        with self._lock:
            wanted = self._wanted
        if not wanted:
            return
        try:
            readings = self._readings_of(self._read())
        except BackendError as exc:
            self._store(None, exc)
            return
        self._store(readings)

    def _loop(self) -> None:
        gap = self.refresh_s  # open() has just read
        while not self._stop.wait(max(MIN_GAP_S, gap)):
            started = self.clock.monotonic()
            self._round()
            gap = self.refresh_s - (self.clock.monotonic() - started)

    # ------------------------------------------------------------------ sampling (never blocks)
    def sample(self, devices: Sequence[int] | None = None, *,
               wants: Wants | None = EVERYTHING) -> Snapshot:
        info = self.info()
        now = self.clock.monotonic()
        with self._lock:
            # the worker's next round runs the tool only where this consumer wants a reading
            self._wanted = wants is None or bool(mapping.READING_ATTRS & set(wants))
            readings, readings_at, error = self._readings, self._readings_at, self._error
        age = round(max(0.0, now - readings_at), 3) if readings_at is not None else None
        chosen = range(len(self._cards)) if devices is None else devices
        out = []
        for i in chosen:
            card = self._cards[i]
            device = Device(index=i, name=card.identity.name, vendor=VENDOR,
                            pci_bus_id=card.identity.bus_id, data_age_s=age,
                            **card.identity.attrs, **readings.get(card.number, {}))
            out.append(self._status_of(device, card, readings, error, age))
        return Snapshot(host=info.host, time=self.clock.wall(), backend=self.name,
                        devices=tuple(out), driver_version=info.driver_version)

    @staticmethod
    def _status_of(device: Device, card: _Card, readings: Mapping[int, dict[str, Any]],
                   error: BaseException | None, age: float | None) -> Device:
        if error is not None:
            when = f"; readings are {age:.0f} s old" if age is not None else "; no reading yet"
            return replace(device, status="error",
                           status_reason=f"rocm-smi's last read failed ({error}){when}")
        if card.number not in readings:
            return replace(device, status="lost",
                           status_reason=f"card{card.number} no longer listed by rocm-smi")
        return device
