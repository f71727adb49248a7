"""The npu-smi backend: Huawei Ascend NPUs, read by running `npu-smi` and parsing its text.

`npu-smi info` can take seconds on an 8-NPU node, so it never runs on a consumer's thread: a
worker thread refreshes the table, another runs the `info -t …` enrichments at a slower cadence,
and sample() returns at once with the last good readings and their age (``Device.data_age_s``).

A read that failed (npu-smi exited with an error, printed what is not a table, or did not answer
within its timeout) makes every chip's status "error" from the next sample on, its reason naming
the failure and the readings' age: a consumer that serves these readings on (the exporter, the
agent) must not present a device it cannot read as healthy. The last good readings stay in the
Device, aged, for a consumer that wants to show them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from gputop.backends.base import (
    CAP_PROCESSES,
    REAL_CLOCK,
    Backend,
    BackendError,
    BackendOptions,
    BackendUnavailable,
    Clock,
    hostname,
)
from gputop.backends.npu_smi.chip_info import (
    parse_board,
    parse_common,
    parse_health,
    parse_memory,
    parse_power,
    parse_temp,
    parse_usages,
)
from gputop.backends.npu_smi.hostprocs import HostFacts
from gputop.backends.npu_smi.info_help import parse_help
from gputop.backends.npu_smi.mapping import (
    ChipKey,
    Enrichment,
    assign_indices,
    chip_key,
    chip_memory,
    display_name,
    health_hints,
    table_devices,
)
from gputop.backends.npu_smi.proc_mem import parse_proc_mem
from gputop.backends.npu_smi.runner import Runner, find_npu_smi, timeout_from_env
from gputop.backends.npu_smi.table import LAYOUT_910_93, LAYOUT_950, ChipRow, NpuTable, parse_table
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, DeviceInfo, NodeInfo, Snapshot

REFRESH_S = 1.0  # how often the table is re-read (back to back when npu-smi is slower)
MIN_GAP_S = 0.2  # rest between two reads even when npu-smi is slower than REFRESH_S
ENRICH_S = 30.0  # pause between two rounds of `info -t …` queries
ENRICH_GAP_S = 0.1  # pause between two queries of a round
ENRICH_MAX_FAILURES = 3  # a query failing this often in a row is not asked again

# The `-t` types worth asking, in order. Parsers take (text, chip id).
ENRICH_PARSERS: dict[str, Callable[[str, int | None], Any]] = {
    "usages": parse_usages,
    "common": parse_common,
    "memory": parse_memory,
    "health": parse_health,
    "board": parse_board,
    "power": parse_power,
    "temp": parse_temp,
    "proc-mem": lambda text, _chip: parse_proc_mem(text)[1],
}
_FIELD = {"proc-mem": "proc_mem"}


class NpuSmiBackend(Backend):
    name = "npu-smi"
    capabilities = frozenset({CAP_PROCESSES})

    def __init__(
        self,
        options: BackendOptions,
        *,
        refresh_s: float = REFRESH_S,
        enrich_s: float = ENRICH_S,
        enrich_gap_s: float = ENRICH_GAP_S,
        timeout_s: float | None = None,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self.options = options
        self.refresh_s = refresh_s
        self.enrich_s = enrich_s
        self.enrich_gap_s = enrich_gap_s
        self.timeout_s = timeout_s
        self.clock = clock
        self._runner: Runner | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._info: NodeInfo | None = None
        self._indices: dict[ChipKey, int] = {}
        self._known: dict[ChipKey, DeviceInfo] = {}
        self._table: NpuTable | None = None
        self._table_at = 0.0
        self._error: BaseException | None = None
        self._enrich: dict[ChipKey, Enrichment] = {}
        self._enrich_failures: dict[tuple[str, ChipKey], int] = {}
        self._facts: dict[int, dict[str, object]] = {}
        self._host = HostFacts()
        self._devices: list[Device] = []
        self._health: dict[int, str] = {}
        self.table_reads = 0  # successful table reads (tests and the TUI's diagnostics read it)
        self.enrich_reads = 0

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        executable = find_npu_smi(self.options.npu_smi)
        timeout = self.timeout_s if self.timeout_s is not None else timeout_from_env()
        self.timeout_s = timeout
        self._runner = Runner(executable, timeout)
        # The first table is read here, so that the first sample (`gputop snapshot`) has data;
        # bounded by the timeout like every other read.
        try:
            table = self._read_table()
        except BackendError as exc:
            self._runner.close()
            raise BackendUnavailable(f"npu-smi is present but unusable: {exc}") from exc
        if not table.chips:
            raise BackendUnavailable("npu-smi lists no NPUs")
        self._indices = assign_indices(table.chips)
        devices = []
        for chip in table.chips:
            key = chip_key(chip)
            di = DeviceInfo(
                index=self._indices[key],
                name=display_name(chip.name),
                vendor="huawei",
                pci_bus_id=chip.bus_id,
                memory_total_mib=_total(chip),
            )
            self._known[key] = di
            devices.append(di)
        self._info = NodeInfo(hostname(), self.name, table.version, None, tuple(devices))
        self._store_table(table)
        self._stop.clear()
        for target, name in ((self._table_loop, "npu-smi-table"),
                             (self._enrich_loop, "npu-smi-enrich")):
            thread = threading.Thread(target=target, name=f"gputop-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def limit_commands(self, limits: Mapping[int, float]) -> list[str]:
        """Return no command: npu-smi sets no power limit, and nvidia-smi's would not apply."""
        return []

    def close(self) -> None:
        self._stop.set()
        if self._runner is not None:
            self._runner.close()  # kills a query in flight, so the threads end at once
        for thread in self._threads:
            thread.join(timeout=2.0)
        self._threads = []

    def info(self) -> NodeInfo:
        if self._info is None:
            raise BackendError("npu-smi backend not open")
        return self._info

    # ------------------------------------------------------------------ sampling (never blocks)
    def sample(self, devices: Sequence[int] | None = None, *,
               wants: Wants | None = EVERYTHING) -> Snapshot:
        info = self.info()
        now = self.clock.monotonic()
        with self._lock:
            built = list(self._devices)
            health = dict(self._health)
            table_at = self._table_at
            error = self._error
        age = round(max(0.0, now - table_at), 3)
        wanted = None if devices is None else set(devices)
        out = []
        for dev in built:
            if wanted is not None and dev.index not in wanted:
                continue
            changes: dict[str, Any] = {"data_age_s": age}
            if error is not None and dev.status != "lost":
                note = f"npu-smi's last read failed ({error}); readings are {age:.0f} s old"
                changes["status"] = "error"
                changes["status_reason"] = (
                    note if not dev.status_reason else f"{dev.status_reason}; {note}"
                )
            out.append(replace(dev, **changes))
        hints = tuple(h for h in health_hints(out, health) if wanted is None or h.device in wanted)
        return Snapshot(
            host=info.host,
            time=self.clock.wall(),
            backend=self.name,
            devices=tuple(out),
            driver_version=info.driver_version,
            hints=hints,
        )

    # ------------------------------------------------------------------ the table thread
    def _read_table(self) -> NpuTable:
        assert self._runner is not None
        return parse_table(self._runner.run("info"))

    def _store_table(self, table: NpuTable) -> None:
        read_at = self.clock.monotonic()  # the readings' age counts from npu-smi's answer
        pids = {p.pid: p.name for p in table.processes}
        facts = self._host.collect(pids) if pids else {}
        with self._lock:
            self._table = table
            self._table_at = read_at
            self._error = None
            self._facts = facts
            self.table_reads += 1
            self._rebuild()

    def _table_loop(self) -> None:
        while not self._stop.is_set():
            started = self.clock.monotonic()
            try:
                table = self._read_table()
            except BackendError as exc:
                if self._stop.is_set():
                    return
                with self._lock:
                    self._error = exc
            else:
                self._store_table(table)
            elapsed = self.clock.monotonic() - started
            self._stop.wait(max(MIN_GAP_S, self.refresh_s - elapsed))

    def _rebuild(self) -> None:
        """Recompute the Devices from the latest table and enrichments (caller holds the lock)."""
        table = self._table
        if table is None:
            return
        facts = self._facts

        def host_facts(pid: int, _name: str | None) -> dict[str, object] | None:
            return facts.get(pid)

        devs = table_devices(table, self._indices, self._enrich, host_facts)
        self._health = {
            d.index: c.health for d, c in zip(devs, table.chips, strict=True)
        }
        present = {chip_key(c) for c in table.chips}
        for key, di in self._known.items():
            if key not in present:
                devs.append(
                    Device(index=di.index, name=di.name, vendor=di.vendor,
                           pci_bus_id=di.pci_bus_id, status="lost",
                           status_reason="no longer listed by `npu-smi info`",
                           npu_id=key[0], chip_id=key[1])
                )
        devs.sort(key=lambda d: d.index)
        self._devices = devs

    # ------------------------------------------------------------------ the enrichment thread
    def _enrich_loop(self) -> None:
        assert self._runner is not None
        types = list(ENRICH_PARSERS)
        use_chip = True
        try:
            helpinfo = parse_help(self._runner.run("info", "-h"))
        except BackendError:
            helpinfo = None  # older versions may not have -h: try every type, drop what fails
        if helpinfo is not None:
            types = [t for t in types if t in helpinfo.types]
            use_chip = "-c" in helpinfo.options
        while not self._stop.is_set():
            with self._lock:
                table = self._table
            if table is None:
                return
            chip_opt = use_chip and table.layout != LAYOUT_950
            for chip in table.chips:
                key = chip_key(chip)
                for kind in types:
                    if self._stop.is_set():
                        return
                    if not self._wanted(kind, key, chip, table):
                        continue
                    args = ["info", "-t", kind, "-i", str(chip.npu_id)]
                    if chip_opt and chip.chip_id is not None:
                        args += ["-c", str(chip.chip_id)]
                    self._enrich_one(kind, key, args, chip.chip_id if chip_opt else None)
                    if self._stop.wait(self.enrich_gap_s):
                        return
            if self._stop.wait(self.enrich_s):
                return

    def _wanted(self, kind: str, key: ChipKey, chip: ChipRow, table: NpuTable) -> bool:
        if self._enrich_failures.get((kind, key), 0) >= ENRICH_MAX_FAILURES:
            return False
        current = self._enrich.get(key)
        if kind == "board":
            return current is None or current.board is None  # static: once is enough
        if kind == "health":
            return chip.health != "OK"  # only the error code of an unhealthy chip is news
        if kind == "power":
            # On an A3 the second chip's "-" is by design (the NPU's power is on chip 0).
            return chip.power_w is None and table.layout != LAYOUT_910_93
        if kind == "temp":
            return chip.temperature_c is None
        if kind == "proc-mem":
            return not table.has_process_table
        return True

    def _enrich_one(self, kind: str, key: ChipKey, args: list[str], chip_id: int | None) -> None:
        assert self._runner is not None
        try:
            record = ENRICH_PARSERS[kind](self._runner.run(*args), chip_id)
        except BackendError:
            # Never loses what the table gave: only this enrichment is affected. A query that
            # keeps failing is dropped, and so is its last answer, rather than shown forever.
            failures = self._enrich_failures.get((kind, key), 0) + 1
            self._enrich_failures[(kind, key)] = failures
            if failures >= ENRICH_MAX_FAILURES and key in self._enrich:
                with self._lock:
                    self._enrich[key] = replace(self._enrich[key], **{_FIELD.get(kind, kind): None})
                    self._rebuild()
            return
        self._enrich_failures.pop((kind, key), None)
        with self._lock:
            current = self._enrich.get(key, Enrichment())
            self._enrich[key] = replace(current, **{_FIELD.get(kind, kind): record})
            self.enrich_reads += 1
            self._rebuild()


def _total(chip: ChipRow) -> float | None:
    total = chip_memory(chip)[1]
    return float(total) if total is not None else None
