"""The NVML backend against the fake pynvml: every mapped field, every failure mode."""

from __future__ import annotations

import getpass
import json
import math
import os

import psutil
import pytest

from gputop.backends.base import (
    BackendError,
    BackendOptions,
    BackendUnavailable,
    NoPermission,
    Unsupported,
)
from gputop.backends.nvml import backend as nvml_backend
from gputop.backends.nvml import reads
from gputop.backends.nvml.backend import NvmlBackend
from gputop.backends.nvml.gpm import MIN_INTERVAL_S
from gputop.core import budget, clock_events
from gputop.host.pidns import PidView
from gputop.host.processes import HostProcesses
from tests.support.fake_pynvml import (
    FakeGpu,
    FakeMigDevice,
    FakeNvml,
    FakeProcess,
    ManualClock,
    a100,
    h100,
    install,
    node,
)

NOT_SUPPORTED = 3
NO_PERMISSION = 4
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
LIB_RM_VERSION_MISMATCH = 18
ARGUMENT_VERSION_MISMATCH = 25
UNINITIALIZED = 1
UNKNOWN = 999


FakeClock = ManualClock


def make(gpus: list[FakeGpu], **kwargs) -> tuple[NvmlBackend, FakeNvml, FakeClock]:
    clock = FakeClock()
    nv = FakeNvml(gpus, clock=clock.wall, **kwargs)
    backend = NvmlBackend(BackendOptions(), nvml=nv, clock=clock)
    return backend, nv, clock


@pytest.fixture
def h100_node():
    backend, nv, clock = make(node(8, 4))
    backend.open()
    yield backend, nv, clock
    backend.close()


# ---------------------------------------------------------------------------- mapped fields

def test_every_field_of_an_h100_maps_from_nvml() -> None:
    gpu = h100(0, [FakeProcess(pid=9_000_001, used_mib=2048.0)])
    gpu.event_mask = 0x4 | 0x40  # sw_power_cap | hw_thermal_slowdown
    gpu.pstate = 2
    gpu.fan = 37
    gpu.pcie_gen, gpu.pcie_width = 4, 8  # link trained down at idle; maxima stay 5 x16
    gpu.compute_mode = 3
    gpu.persistence = 0
    backend, nv, clock = make([gpu])
    with backend:
        info = backend.info()
        dev = backend.sample().devices[0]
    assert info.backend == "nvml" and info.driver_version == "580.95.05"
    assert info.cuda_version == "13.0"
    di = info.devices[0]
    assert (di.uuid, di.name, di.pci_bus_id) == (gpu.uuid, "NVIDIA H100 80GB HBM3", "00000000:18:00.0")
    assert (di.power_limit_default_w, di.power_limit_min_w, di.power_limit_max_w) == (700, 200, 700)
    assert (di.clock_sm_max_mhz, di.clock_mem_max_mhz, di.memory_total_mib) == (1980, 2619, 81559)

    assert dev.status == "ok" and dev.status_reason is None
    assert dev.index == 0 and dev.vendor == "nvidia" and dev.uuid == gpu.uuid
    assert dev.name == "NVIDIA H100 80GB HBM3" and dev.pci_bus_id == "00000000:18:00.0"
    assert dev.memory_total_mib == 81559
    assert dev.memory_used_mib == 40211
    assert dev.memory_reserved_mib == 479
    assert (dev.utilization_gpu_pct, dev.utilization_memory_pct) == (97, 41)
    assert (dev.temperature_c, dev.temperature_memory_c) == (61, 70)
    assert dev.fan_pct == 37
    assert dev.power_draw_w == pytest.approx(512.3)
    assert dev.power_limit_w == 700.0
    assert (dev.power_limit_default_w, dev.power_limit_min_w, dev.power_limit_max_w) == (700, 200, 700)
    assert dev.energy_j == pytest.approx(123456.789)
    assert (dev.clock_sm_mhz, dev.clock_mem_mhz) == (1980, 2619)
    assert (dev.clock_sm_max_mhz, dev.clock_mem_max_mhz) == (1980, 2619)
    assert dev.pstate == "P2"
    assert dev.clock_event_mask == 0x44
    assert dev.clock_event_reasons == ("sw_power_cap", "hw_thermal_slowdown")
    assert dev.clock_event_reasons == clock_events.decode(0x44)
    assert (dev.pcie_gen, dev.pcie_width, dev.pcie_gen_max, dev.pcie_width_max) == (4, 8, 5, 16)
    assert dev.ecc_mode is True and dev.persistence_mode is False and dev.mig_mode == "disabled"
    assert dev.compute_mode == "Exclusive_Process"
    assert dev.serial == gpu.serial and dev.vbios_version == "96.00.74.00.01"
    assert dev.minor_number == 0
    assert dev.saturation.source == "gpm"
    assert dev.sim is None
    (proc,) = dev.processes
    assert proc.pid == 9_000_001 and proc.gpu_memory_mib == 2048 and proc.type == "C"


def test_health_counters_limits_and_thresholds_map_from_nvml() -> None:
    """What dcgm-exporter's health and limit fields serve: each from its own NVML call."""
    import pynvml as real

    healthy, worn = h100(0), a100(1)
    healthy.power_limit_mw = 450_000  # set with -pl: the management limit
    healthy.remapped_rows = (3, 1, 1, 0)  # (correctable, uncorrectable, pending, failure)
    healthy.nvlink_errors = {real.NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: 7,
                             real.NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL: 2,
                             real.NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL: 5,
                             real.NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL: 0}
    worn.remapped_rows = None  # an older part: pages are retired instead
    worn.retired_pages = {real.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS: 4,
                          real.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR: 1}
    worn.retired_pending = 1
    worn.temperature_thresholds = {0: 90, 1: 87}  # no GPU or memory maximum
    backend, nv, clock = make([healthy, worn])
    with backend:
        h, w = backend.sample().devices
    assert h.power_management_limit_w == 450.0
    assert (h.remapped_rows_correctable, h.remapped_rows_uncorrectable,
            h.remapped_rows_pending, h.remapped_rows_failed) == (3, 1, True, False)
    assert (h.nvlink_crc_flit_errors, h.nvlink_crc_data_errors, h.nvlink_replay_errors,
            h.nvlink_recovery_errors) == (7, 2, 5, 0)
    assert (h.retired_pages_sbe, h.retired_pages_dbe, h.retired_pages_pending) == (None,) * 3
    assert (h.temperature_shutdown_c, h.temperature_slowdown_c, h.temperature_memory_max_c,
            h.temperature_gpu_max_c) == (92, 89, 95, 87)
    assert (w.retired_pages_sbe, w.retired_pages_dbe, w.retired_pages_pending) == (4, 1, True)
    assert w.remapped_rows_pending is None and w.nvlink_replay_errors is None
    assert (w.temperature_shutdown_c, w.temperature_slowdown_c) == (90, 87)
    assert (w.temperature_memory_max_c, w.temperature_gpu_max_c) == (None, None)


def test_the_minor_number_is_the_device_files_not_the_index() -> None:
    """/dev/nvidiaN's N (what Slurm's GRES indices count) need not follow NVML's index."""
    gpus = [h100(0), h100(1)]
    gpus[0].minor, gpus[1].minor = 1, 0
    backend, nv, clock = make(gpus)
    with backend:
        assert [d.minor_number for d in backend.sample().devices] == [1, 0]


def test_an_a100_maps_its_own_values_and_has_no_gpm() -> None:
    backend, nv, clock = make([a100(0)])
    with backend:
        dev = backend.sample().devices[0]
    assert dev.name == "NVIDIA A100-SXM4-80GB"
    assert (dev.memory_total_mib, dev.memory_used_mib, dev.memory_reserved_mib) == (81920, 30000, 566)
    assert (dev.power_draw_w, dev.power_limit_w, dev.power_limit_min_w) == (301.25, 400, 100)
    assert (dev.clock_sm_max_mhz, dev.pcie_gen_max) == (1410, 4)
    assert dev.saturation.source is None
    assert all(getattr(dev.saturation, k) is None for k in ("sm_active_pct", "tensor_active_pct",
                                                            "dram_bw_pct", "nvlink_tx_mibps"))
    assert nv.count("nvmlGpmSampleAlloc") == 0


def test_json_of_an_nvml_snapshot_has_every_schema_key(h100_node) -> None:
    backend, nv, clock = h100_node
    doc = json.loads(json.dumps(nvml_snapshot_json(backend)))
    assert doc["backend"] == "nvml" and "sim" not in doc["devices"][0]
    for key in ("memory_used_mib", "power_limit_default_w", "clock_event_reasons", "saturation"):
        assert key in doc["devices"][0]


def nvml_snapshot_json(backend: NvmlBackend) -> dict:
    from gputop.core.model import snapshot_from_json, snapshot_to_json

    doc = snapshot_to_json(backend.sample())
    assert snapshot_from_json(doc).devices  # round-trips through the codec
    return doc


@pytest.mark.parametrize("count", [0, 1, 8, 16])
def test_node_sizes(count: int) -> None:
    backend, nv, clock = make(node(count, 2))
    with backend:
        snap = backend.sample()
        assert len(backend.info().devices) == count
    assert [d.index for d in snap.devices] == list(range(count))
    assert all(d.status == "ok" and len(d.processes) == 2 for d in snap.devices)
    assert len({d.uuid for d in snap.devices}) == count
    assert nv.initialized == 0  # close() shut NVML down


def test_a_subset_of_devices_is_sampled_alone(h100_node) -> None:
    backend, nv, clock = h100_node
    before = nv.count("nvmlDeviceGetPowerUsage")
    snap = backend.sample([2, 5])
    assert [d.index for d in snap.devices] == [2, 5]
    assert nv.count("nvmlDeviceGetPowerUsage") - before == 2


# ---------------------------------------------------------------------------- least work

def test_a_lean_sample_makes_no_process_or_gpm_call_and_the_counters_are_the_same(h100_node) -> None:
    backend, nv, clock = h100_node
    full = backend.sample()
    asked = {fn: nv.count(fn) for fn in ("nvmlDeviceGetComputeRunningProcesses_v3",
                                         "nvmlDeviceGetProcessUtilization", "nvmlGpmSampleGet",
                                         "nvmlDeviceGetEncoderUtilization")}
    lean = backend.sample(wants=budget.wants("memory_used_mib", "power_draw_w"))
    assert {fn: nv.count(fn) for fn in asked} == asked
    assert all(d.utilization_encoder_pct is None for d in lean.devices)  # not asked: None
    assert all(d.processes == () for d in lean.devices)
    assert all(d.saturation.sm_active_pct is None for d in lean.devices)
    assert [d.memory_used_mib for d in lean.devices] == [d.memory_used_mib for d in full.devices]
    assert [d.power_draw_w for d in lean.devices] == [d.power_draw_w for d in full.devices]
    # the host facts of the processes survive a lean sample: the next full one needs no lookups
    assert backend.sample().devices[0].processes[0].user == full.devices[0].processes[0].user


def test_static_facts_are_read_once_and_slow_values_cached(h100_node) -> None:
    backend, nv, clock = h100_node
    for _ in range(5):
        clock.advance(1.0)
        backend.sample()
    assert nv.count("nvmlDeviceGetName") == 8
    assert nv.count("nvmlDeviceGetUUID") == 8
    assert nv.count("nvmlDeviceGetPowerManagementLimitConstraints") == 8
    assert nv.count("nvmlDeviceGetMaxClockInfo") == 24  # SM, memory, graphics
    assert nv.count("nvmlDeviceGetEccMode") == 8  # refreshed every SLOW_REFRESH_S only
    assert nv.count("nvmlDeviceGetTotalEccErrors") == 32  # 4 counters x 8, slow too
    assert nv.count("nvmlDeviceGetPowerUsage") == 40
    assert nv.count("nvmlDeviceGetEncoderUtilization") == 40  # live: every tick
    assert nv.count("nvmlDeviceGetClockInfo") == 40 * 4  # SM, memory, graphics, video
    clock.advance(reads.SLOW_REFRESH_S)
    backend.sample()
    assert nv.count("nvmlDeviceGetEccMode") == 16
    assert nv.count("nvmlDeviceGetTotalEccErrors") == 64
    for static in ("nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo",
                   "nvmlDeviceGetSerial", "nvmlDeviceGetVbiosVersion", "nvmlDeviceGetMinorNumber",
                   "nvmlDeviceGetPowerManagementDefaultLimit", "nvmlGpmQueryDeviceSupport",
                   "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetCudaComputeCapability",
                   "nvmlDeviceGetSupportedClocksEventReasons"):
        assert nv.count(static) == 8, static
    assert nv.count("nvmlSystemGetDriverVersion") == 1


def test_slow_values_follow_a_change_after_the_refresh_period(h100_node) -> None:
    backend, nv, clock = h100_node
    nv.gpus[1].mig = 1
    nv.gpus[1].ecc = 0
    assert backend.sample([1]).devices[0].mig_mode == "disabled"
    clock.advance(reads.SLOW_REFRESH_S)
    dev = backend.sample([1]).devices[0]
    assert dev.mig_mode == "enabled" and dev.ecc_mode is False


# ---------------------------------------------------------------------------- query-mode fields

def test_the_fields_query_mode_prints_map_from_nvml() -> None:
    gpu = h100(0)
    gpu.util_encoder, gpu.util_decoder = 12, 34
    gpu.clock_sm, gpu.clock_video = 1755, 1410  # NVML's graphics clock is the SM one on Hopper
    gpu.ecc_pending, gpu.mig_pending = 0, 1  # changes waiting for a GPU reset
    gpu.ecc_errors = {(nvml_backend_const("NVML_MEMORY_ERROR_TYPE_CORRECTED"),
                       nvml_backend_const("NVML_VOLATILE_ECC")): 3,
                      (nvml_backend_const("NVML_MEMORY_ERROR_TYPE_CORRECTED"),
                       nvml_backend_const("NVML_AGGREGATE_ECC")): 17,
                      (nvml_backend_const("NVML_MEMORY_ERROR_TYPE_UNCORRECTED"),
                       nvml_backend_const("NVML_VOLATILE_ECC")): 1,
                      (nvml_backend_const("NVML_MEMORY_ERROR_TYPE_UNCORRECTED"),
                       nvml_backend_const("NVML_AGGREGATE_ECC")): 2}
    backend, nv, clock = make([gpu, a100(1)])
    with backend:
        dev, ampere = backend.sample().devices
    assert (dev.pci_device_id, dev.pci_sub_device_id) == (0x233010DE, 0x16C110DE)
    assert dev.compute_capability == "9.0" and ampere.compute_capability == "8.0"
    assert ampere.pci_device_id == 0x20B210DE
    # NVML's own free bytes: v2 free = total - reserved - used
    assert dev.memory_free_mib == 81559 - 479 - 40211
    assert (dev.utilization_encoder_pct, dev.utilization_decoder_pct) == (12, 34)
    assert dev.power_limit_w == 700.0 and ampere.power_limit_w == 400.0  # the enforced limit
    assert (dev.clock_graphics_mhz, dev.clock_video_mhz) == (1755, 1410)
    assert (ampere.clock_graphics_mhz, ampere.clock_video_mhz) == (1410, 1275)
    assert (dev.clock_graphics_max_mhz, ampere.clock_graphics_max_mhz) == (1980, 1410)
    assert dev.clock_event_supported_mask == 0x1FF
    assert (dev.ecc_mode, dev.ecc_mode_pending) == (True, False)
    assert (dev.mig_mode, dev.mig_mode_pending) == ("disabled", "enabled")
    assert (dev.ecc_errors_corrected_volatile, dev.ecc_errors_corrected_aggregate,
            dev.ecc_errors_uncorrected_volatile, dev.ecc_errors_uncorrected_aggregate) == (
        3, 17, 1, 2)
    assert (ampere.ecc_errors_corrected_volatile, ampere.ecc_errors_uncorrected_aggregate) == (0, 0)


def nvml_backend_const(name: str) -> int:
    import pynvml

    return getattr(pynvml, name)


def test_memory_free_comes_from_the_memory_call_already_made() -> None:
    backend, nv, clock = make([h100(0)])
    with backend:
        dev = backend.sample().devices[0]
        assert nv.count("nvmlDeviceGetMemoryInfo_v2") == 1  # no extra call for the free figure
        assert nv.count("nvmlDeviceGetMemoryInfo") == 1  # _static's total only
    assert dev.memory_free_mib == 40869
    backend, nv, clock = make([h100(0)])
    nv.remove_function("nvmlDeviceGetMemoryInfo_v2")
    with backend:
        dev = backend.sample().devices[0]
    # v1: used includes the reservation, free is what is left
    assert dev.memory_free_mib == 81559 - 479 - 40211


def test_ecc_counters_are_not_asked_while_ecc_is_off() -> None:
    gpu = h100(0)
    gpu.ecc, gpu.ecc_pending = 0, 1  # ECC turned on, waiting for a reset
    backend, nv, clock = make([gpu])
    with backend:
        dev = backend.sample().devices[0]
        assert nv.count("nvmlDeviceGetTotalEccErrors") == 0
        assert (dev.ecc_mode, dev.ecc_mode_pending) == (False, True)
        assert dev.ecc_errors_corrected_volatile is None  # N/A, never a made-up 0
        gpu.ecc = 1  # after the reset: the counters are read again at the next slow refresh
        clock.advance(reads.SLOW_REFRESH_S)
        dev = backend.sample().devices[0]
    assert dev.ecc_errors_corrected_volatile == 0 and dev.ecc_errors_uncorrected_aggregate == 0


def test_no_encoder_decoder_or_video_clock_are_none_and_not_asked_again() -> None:
    gpu = h100(0)
    gpu.util_encoder = gpu.util_decoder = gpu.clock_video = None  # NotSupported, per field
    backend, nv, clock = make([gpu])
    with backend:
        dev = backend.sample().devices[0]
        clock.advance(1)
        again = backend.sample().devices[0]
    for d in (dev, again):
        assert d.utilization_encoder_pct is None and d.utilization_decoder_pct is None
        assert d.clock_video_mhz is None
        assert d.clock_graphics_mhz == 1980 and d.clock_sm_mhz == 1980  # same call, other type
    assert nv.count("nvmlDeviceGetEncoderUtilization") == 1
    assert nv.count("nvmlDeviceGetDecoderUtilization") == 1
    assert nv.count("nvmlDeviceGetClockInfo") == 4 + 3  # video asked on the first tick only


def test_older_binding_without_supported_clocks_event_reasons_uses_throttle_reasons() -> None:
    backend, nv, clock = make([h100(0)])
    nv.hide_binding("nvmlDeviceGetSupportedClocksEventReasons")
    with backend:
        dev = backend.sample().devices[0]
    assert dev.clock_event_supported_mask == 0x1FF
    assert nv.count("nvmlDeviceGetSupportedClocksThrottleReasons") == 1


# ---------------------------------------------------------------------------- per-field failures

@pytest.mark.parametrize("code", [NOT_SUPPORTED, NO_PERMISSION])
@pytest.mark.parametrize(("fn", "attr"), [
    ("nvmlDeviceGetPowerUsage", "power_draw_w"),
    ("nvmlDeviceGetTotalEnergyConsumption", "energy_j"),
    ("nvmlDeviceGetTemperature", "temperature_c"),
    ("nvmlDeviceGetUtilizationRates", "utilization_gpu_pct"),
    ("nvmlDeviceGetPerformanceState", "pstate"),
    ("nvmlDeviceGetCurrentClocksEventReasons", "clock_event_reasons"),
    ("nvmlDeviceGetCurrPcieLinkGeneration", "pcie_gen"),
    ("nvmlDeviceGetEnforcedPowerLimit", "power_limit_w"),
    ("nvmlDeviceGetEccMode", "ecc_mode"),
    ("nvmlDeviceGetPersistenceMode", "persistence_mode"),
    ("nvmlDeviceGetDisplayActive", "display_active"),
    ("nvmlDeviceGetMigMode", "mig_mode"),
    ("nvmlDeviceGetComputeMode", "compute_mode"),
    ("nvmlDeviceGetMaxPcieLinkWidth", "pcie_width_max"),
    ("nvmlDeviceGetClockInfo", "clock_sm_mhz"),
    ("nvmlDeviceGetFieldValues", "temperature_memory_c"),
    ("nvmlDeviceGetPowerManagementLimitConstraints", "power_limit_min_w"),
    ("nvmlDeviceGetMaxClockInfo", "clock_sm_max_mhz"),
    ("nvmlDeviceGetSerial", "serial"),
    ("nvmlDeviceGetPciInfo", "pci_device_id"),
    ("nvmlDeviceGetPciInfo", "pci_sub_device_id"),
    ("nvmlDeviceGetCudaComputeCapability", "compute_capability"),
    ("nvmlDeviceGetEncoderUtilization", "utilization_encoder_pct"),
    ("nvmlDeviceGetDecoderUtilization", "utilization_decoder_pct"),
    ("nvmlDeviceGetClockInfo", "clock_graphics_mhz"),
    ("nvmlDeviceGetClockInfo", "clock_video_mhz"),
    ("nvmlDeviceGetMaxClockInfo", "clock_graphics_max_mhz"),
    ("nvmlDeviceGetSupportedClocksEventReasons", "clock_event_supported_mask"),
    ("nvmlDeviceGetEccMode", "ecc_mode_pending"),
    ("nvmlDeviceGetMigMode", "mig_mode_pending"),
    ("nvmlDeviceGetTotalEccErrors", "ecc_errors_corrected_volatile"),
    ("nvmlDeviceGetTotalEccErrors", "ecc_errors_uncorrected_volatile"),
    ("nvmlDeviceGetTotalEccErrors", "ecc_errors_corrected_aggregate"),
    ("nvmlDeviceGetTotalEccErrors", "ecc_errors_uncorrected_aggregate"),
])
def test_a_field_nvml_refuses_is_none_and_the_rest_still_reads(fn, attr, code) -> None:
    backend, nv, clock = make(node(2, 1))
    nv.fail(fn, code, device=1)
    with backend:
        snap = backend.sample()
        clock.advance(1)
        calls = nv.count(fn)
        again = backend.sample([1])
    bad, good = snap.devices[1], snap.devices[0]
    assert getattr(bad, attr) is None
    assert getattr(good, attr) is not None
    assert bad.status == "ok"
    assert bad.memory_used_mib == 40211 and bad.utilization_memory_pct in (41, None)
    # a refused field is not asked again on that device
    assert nv.count(fn) == calls
    assert getattr(again.devices[0], attr) is None


def test_memory_v2_missing_falls_back_to_v1() -> None:
    backend, nv, clock = make([h100(0)])
    nv.remove_function("nvmlDeviceGetMemoryInfo_v2")
    with backend:
        dev = backend.sample().devices[0]
        backend.sample()
    # v1 counts the driver's reservation as used, and cannot tell it apart
    assert dev.memory_used_mib == 40211 + 479
    assert dev.memory_reserved_mib is None
    assert nv.count("nvmlDeviceGetMemoryInfo_v2") == 1  # never asked again


def test_older_binding_without_clocks_event_reasons_uses_throttle_reasons() -> None:
    gpu = h100(0)
    gpu.event_mask = 0x1
    backend, nv, clock = make([gpu])
    nv.hide_binding("nvmlDeviceGetCurrentClocksEventReasons")
    with backend:
        dev = backend.sample().devices[0]
    assert dev.clock_event_reasons == ("gpu_idle",)
    assert nv.count("nvmlDeviceGetCurrentClocksThrottleReasons") == 1


def test_binding_without_the_deprecated_temperature_call_uses_temperature_v() -> None:
    backend, nv, clock = make([h100(0)])
    nv.hide_binding("nvmlDeviceGetTemperature")
    with backend:
        dev = backend.sample().devices[0]
    assert dev.temperature_c == 61
    assert nv.count("nvmlDeviceGetTemperatureV") == 1


def test_process_utilization_raising_nvml_success_means_no_samples() -> None:
    # pynvml's wrapper raises NVMLError(NVML_SUCCESS) when the sizing call finds nothing
    backend, nv, clock = make(node(2, 2))
    nv.fail("nvmlDeviceGetProcessUtilization", 0)
    with backend:
        snap = backend.sample()
        clock.advance(1)
        nv.heal("nvmlDeviceGetProcessUtilization")
        later = backend.sample()
    assert all(d.status == "ok" for d in snap.devices)
    assert all(p.sm_pct is None for d in snap.devices for p in d.processes)
    assert all(p.sm_pct == 45 for d in later.devices for p in d.processes)


def test_no_fan_no_memory_temperature_and_no_nvlink_are_none_and_not_asked_again() -> None:
    gpu = h100(0)
    gpu.memory_temperature = None
    backend, nv, clock = make([gpu])
    with backend:
        dev = backend.sample().devices[0]
        clock.advance(reads.SLOW_REFRESH_S)
        backend.sample()
    assert dev.fan_pct is None and dev.temperature_memory_c is None
    assert dev.nvlink_replay_errors is None
    assert nv.count("nvmlDeviceGetFanSpeed") == 1
    # once for the memory temperature, once for the NVLink error totals
    assert nv.count("nvmlDeviceGetFieldValues") == 2


# ---------------------------------------------------------------------------- device failures

def test_a_gpu_lost_mid_run_is_marked_and_the_others_keep_sampling(h100_node) -> None:
    backend, nv, clock = h100_node
    assert all(d.status == "ok" for d in backend.sample().devices)
    nv.lose(3)
    clock.advance(1)
    snap = backend.sample()
    lost = snap.devices[3]
    assert lost.status == "lost" and "lost" in lost.status_reason
    assert lost.uuid == nv.gpus[3].uuid and lost.memory_used_mib is None
    assert lost.minor_number == 3  # identity, as read while it answered (Slurm's GRES need it)
    assert lost.processes == ()
    others = [d for d in snap.devices if d.index != 3]
    assert all(d.status == "ok" and d.power_draw_w == pytest.approx(512.3) for d in others)
    assert all(len(d.processes) == 4 for d in others)
    # the lost GPU is not hammered every tick
    calls = nv.count("nvmlDeviceGetPowerUsage")
    clock.advance(0.5)
    backend.sample()
    assert nv.count("nvmlDeviceGetPowerUsage") - calls == 7


def test_a_lost_gpu_that_comes_back_is_picked_up_after_reinit(h100_node) -> None:
    backend, nv, clock = h100_node
    backend.sample()
    nv.lose(3)
    clock.advance(1)
    assert backend.sample().devices[3].status == "lost"
    clock.advance(nvml_backend.RETRY_FIRST_S)
    assert backend.sample().devices[3].status == "lost"  # still gone: retried, backed off
    inits = nv.count("nvmlInit")
    assert inits == 2
    clock.advance(nvml_backend.RETRY_FIRST_S)  # backoff doubled: not yet
    backend.sample()
    assert nv.count("nvmlInit") == inits
    nv.recover(3)
    clock.advance(2 * nvml_backend.RETRY_FIRST_S)
    snap = backend.sample()
    assert nv.count("nvmlInit") == inits + 1
    assert all(d.status == "ok" for d in snap.devices)
    assert snap.devices[3].power_draw_w == pytest.approx(512.3)
    assert snap.devices[3].saturation.source == "gpm"


def test_unknown_error_marks_the_device_error_with_a_reason(h100_node) -> None:
    backend, nv, clock = h100_node
    nv.fail("nvmlDeviceGetUtilizationRates", UNKNOWN, device=5)
    snap = backend.sample()
    assert snap.devices[5].status == "error"
    assert "Unknown" in snap.devices[5].status_reason
    assert [d.status for d in snap.devices].count("ok") == 7
    nv.heal("nvmlDeviceGetUtilizationRates", device=5)
    clock.advance(nvml_backend.RETRY_FIRST_S)
    assert backend.sample().devices[5].status == "ok"


def test_nvml_uninitialized_everywhere_recovers_by_reinit(h100_node) -> None:
    backend, nv, clock = h100_node
    backend.sample()
    nv.initialized = 0  # the driver was reloaded under us
    snap = backend.sample()
    assert all(d.status == "error" for d in snap.devices)
    assert "Uninitialized" in snap.devices[0].status_reason
    clock.advance(nvml_backend.RETRY_FIRST_S)
    assert all(d.status == "ok" for d in backend.sample().devices)


def test_a_gpu_lost_before_open_is_listed_as_lost_and_found_when_back() -> None:
    backend, nv, clock = make(node(4, 1))
    nv.lose(2)
    with backend:
        snap = backend.sample()
        assert backend.info().devices[2].uuid is None  # never seen: nothing to show
        nv.recover(2)
        clock.advance(nvml_backend.RETRY_FIRST_S)
        back = backend.sample().devices[2]
    assert [d.status for d in snap.devices] == ["ok", "ok", "lost", "ok"]
    assert back.status == "ok" and back.uuid == nv.gpus[2].uuid
    assert back.name == "NVIDIA H100 80GB HBM3" and back.power_limit_max_w == 700


def test_capabilities_are_what_this_node_gives() -> None:
    from gputop.backends.base import CAP_ENERGY, CAP_POWER_LIMIT, CAP_PROCESSES, CAP_SATURATION

    hopper, _, _ = make([h100(0), a100(1)])
    ampere, nv, _ = make([a100(0)])
    nv.fail("nvmlDeviceGetTotalEnergyConsumption", NOT_SUPPORTED)
    nv.fail("nvmlDeviceGetPowerManagementLimitConstraints", NOT_SUPPORTED)
    with hopper, ampere:
        assert hopper.capabilities == {CAP_PROCESSES, CAP_SATURATION, CAP_POWER_LIMIT, CAP_ENERGY}
        assert ampere.capabilities == {CAP_PROCESSES}


def test_nothing_raises_through_sample_whatever_fails() -> None:
    backend, nv, clock = make(node(4, 2) + [a100(4)])
    with backend:
        for fn in ("nvmlDeviceGetPowerUsage", "nvmlDeviceGetComputeRunningProcesses_v3",
                   "nvmlDeviceGetProcessUtilization", "nvmlGpmSampleGet", "nvmlGpmMetricsGet",
                   "nvmlDeviceGetClockInfo", "nvmlDeviceGetMemoryInfo_v2"):
            for code in (NOT_SUPPORTED, NO_PERMISSION, GPU_IS_LOST, UNKNOWN, UNINITIALIZED, 10):
                nv.fail(fn, code)
                clock.advance(0.3)
                snap = backend.sample()
                assert len(snap.devices) == 5
                nv.heal(fn)
        clock.advance(120)
        snap = backend.sample()
        clock.advance(0.2)
        snap = backend.sample()
    assert [d.status for d in snap.devices] == ["ok"] * 5


# ---------------------------------------------------------------------------- processes

def test_compute_and_graphics_processes_merge_by_pid() -> None:
    gpu = h100(0, [
        FakeProcess(pid=9_000_001, used_mib=1000.0, kind="C"),
        FakeProcess(pid=9_000_002, used_mib=200.0, kind="G"),
        FakeProcess(pid=9_000_003, used_mib=300.0, kind="C+G"),
        FakeProcess(pid=9_000_004, used_mib=None, kind="C", sm_util=None),
    ])
    backend, nv, clock = make([gpu])
    with backend:
        procs = {p.pid: p for p in backend.sample().devices[0].processes}
    assert {pid: p.type for pid, p in procs.items()} == {
        9_000_001: "C", 9_000_002: "G", 9_000_003: "C+G", 9_000_004: "C"}
    assert procs[9_000_003].gpu_memory_mib == 300
    assert procs[9_000_004].gpu_memory_mib is None  # NVML_VALUE_NOT_AVAILABLE
    assert procs[9_000_001].sm_pct == 50 and procs[9_000_004].sm_pct is None
    # a pid that is not on this host: no made-up host facts
    assert procs[9_000_001].user is None and procs[9_000_001].cpu_pct is None


@pytest.mark.parametrize(("missing", "used"), [
    ((), "nvmlDeviceGetComputeRunningProcesses_v3"),
    (("nvmlDeviceGetComputeRunningProcesses_v3",), "nvmlDeviceGetComputeRunningProcesses_v2"),
    (("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"),
     "nvmlDeviceGetComputeRunningProcesses"),
])
def test_process_api_falls_back_v3_v2_v1_once(missing, used) -> None:
    backend, nv, clock = make(node(2, 3))
    nv.remove_function(*missing)  # an old driver: FUNCTION_NOT_FOUND
    with backend:
        for _ in range(3):
            clock.advance(1)
            snap = backend.sample()
    assert all(len(d.processes) == 3 for d in snap.devices)
    assert all(p.gpu_memory_mib == 10000 for d in snap.devices for p in d.processes)
    assert nv.count(used) == 6
    for name in missing:
        assert nv.count(name) == 1  # probed once for the node, then remembered


def test_binding_without_v3_wrapper_uses_v2() -> None:
    backend, nv, clock = make(node(1, 2))
    nv.hide_binding("nvmlDeviceGetComputeRunningProcesses_v3")
    with backend:
        snap = backend.sample()
    assert len(snap.devices[0].processes) == 2
    assert nv.count("nvmlDeviceGetComputeRunningProcesses_v2") == 1


def test_graphics_processes_not_supported_leave_compute_ones() -> None:
    backend, nv, clock = make(node(1, 2))
    nv.fail("nvmlDeviceGetGraphicsRunningProcesses_v3", NOT_SUPPORTED)
    with backend:
        backend.sample()
        snap = backend.sample()
    assert len(snap.devices[0].processes) == 2
    assert nv.count("nvmlDeviceGetGraphicsRunningProcesses_v3") == 1


def test_process_sm_uses_last_seen_timestamp_and_not_found_is_no_sample() -> None:
    backend, nv, clock = make(node(1, 2))
    seen = []
    real = nv.nvmlDeviceGetProcessUtilization

    def spy(handle, ts):
        seen.append(ts)
        return real(handle, ts)

    nv.nvmlDeviceGetProcessUtilization = spy
    with backend:
        first = backend.sample().devices[0]
        again = backend.sample().devices[0]  # same instant: NVML answers NOT_FOUND
        clock.advance(nvml_backend.SM_SAMPLE_TTL_S + 1)
        nv.gpus[0].processes[0].sm_util = None  # this one stopped producing samples
        later = backend.sample().devices[0]
    assert [p.sm_pct for p in first.processes] == [45, 45]
    assert [p.sm_pct for p in again.processes] == [45, 45]  # recent sample still shown
    assert seen[0] == 0 and seen[1] > 0 and seen[2] == seen[1]
    assert [p.sm_pct for p in later.processes] == [None, 45]


def test_a_listed_pid_the_host_no_longer_has_is_gone_and_a_live_one_is_not() -> None:
    gpu = h100(0, [FakeProcess(pid=9_000_001, used_mib=100.0),  # above any pid_max: none has it
                   FakeProcess(pid=os.getpid(), used_mib=100.0)])
    host = HostProcesses(pid_view=PidView(True, True))  # the host's PIDs, wherever this runs
    backend = NvmlBackend(BackendOptions(), nvml=FakeNvml([gpu], clock=FakeClock().wall),
                          clock=FakeClock(), host=host)
    with backend:
        procs = {p.pid: p for p in backend.sample().devices[0].processes}
    assert procs[9_000_001].gone and procs[9_000_001].command is None
    assert not procs[os.getpid()].gone and procs[os.getpid()].command


def test_host_facts_come_from_psutil_for_a_live_pid() -> None:
    me = psutil.Process(os.getpid())
    backend, nv, clock = make([h100(0, [FakeProcess(pid=os.getpid(), used_mib=512.0)])])
    with backend:
        first = backend.sample().devices[0].processes[0]
        sum(i * i for i in range(200_000))  # burn some CPU between the two measurements
        second = backend.sample().devices[0].processes[0]
    assert first.user == getpass.getuser() == second.user
    assert first.name == me.name()
    assert first.command == " ".join(me.cmdline())
    assert first.started == me.create_time()
    assert first.host_memory_mib > 1
    assert first.cpu_pct is None  # psutil's first reading is meaningless
    assert second.cpu_pct is not None and second.cpu_pct >= 0


def test_gpm_on_h100_fills_saturation_and_none_on_a100() -> None:
    backend, nv, clock = make([h100(0), a100(1)])
    with backend:
        hopper, ampere = backend.sample().devices
    sat = hopper.saturation
    assert sat.source == "gpm"
    assert (sat.sm_active_pct, sat.sm_occupancy_pct, sat.tensor_active_pct) == (83.0, 40.1, 55.0)
    assert sat.gr_engine_active_pct == 97.0
    assert (sat.dram_bw_pct, sat.fp16_pct, sat.fp32_pct, sat.fp64_pct) == (31.0, 4.5, 12.25, 0.5)
    assert (sat.pcie_tx_mibps, sat.pcie_rx_mibps) == (1234.5, 2345.5)
    assert (sat.nvlink_tx_mibps, sat.nvlink_rx_mibps) == (98765.0, 87654.0)
    assert ampere.saturation.source is None and ampere.saturation.sm_active_pct is None
    assert nv.gpm_intervals[(0, None)] >= MIN_INTERVAL_S - 1e-6  # wall-clock float rounding


LINKS = budget.wants("saturation", budget.LINK_RATES)  # what the wide cards' line asks


def test_without_gpm_the_link_rates_come_from_nvml_counters() -> None:
    gpu = a100(0)
    gpu.nvlink_kib = [(0, 0)] * 12
    backend, nv, clock = make([gpu])
    with backend:
        first = backend.sample(wants=LINKS).devices[0].saturation
        gpu.nvlink_kib = [(1024 * 1024, 512 * 1024)] * 12  # per link: 1 GiB TX, 0.5 GiB RX
        clock.advance(0.5)
        second = backend.sample(wants=LINKS).devices[0].saturation
        gpu.nvlink_kib = [(0, 0)] * 12  # the counters reset (a driver reload)
        clock.advance(0.5)
        reset = backend.sample(wants=LINKS).devices[0].saturation
    assert first.source is None and first.sm_active_pct is None  # SM figures: still unmeasured
    assert (first.pcie_tx_mibps, first.pcie_rx_mibps) == (100.0, 300.0)  # 102400, 307200 KB/s
    assert (first.nvlink_tx_mibps, first.nvlink_rx_mibps) == (None, None)  # one reading: no rate
    # 12 links x 1 GiB (0.5 GiB) over 0.5 s
    assert (second.nvlink_tx_mibps, second.nvlink_rx_mibps) == (24 * 1024.0, 12 * 1024.0)
    assert (reset.nvlink_tx_mibps, reset.nvlink_rx_mibps) == (None, None)
    assert reset.pcie_tx_mibps == 100.0


def test_with_gpm_the_link_rates_are_gpms_and_cost_no_call() -> None:
    backend, nv, clock = make([h100(0)])
    with backend:
        for _ in range(3):
            sat = backend.sample(wants=LINKS).devices[0].saturation
            clock.advance(1.0)
    assert (sat.pcie_tx_mibps, sat.nvlink_rx_mibps) == (1234.5, 87654.0)  # GPM's
    assert nv.count("nvmlDeviceGetPcieThroughput") == 0
    assert nv.count("nvmlDeviceGetFieldValues") == 0


def test_the_link_counters_are_read_only_when_asked_and_na_where_absent() -> None:
    quiet = a100(0)
    none = a100(1)
    none.pcie_throughput = None  # NotSupported; and no NVLink
    backend, nv, clock = make([quiet, none])
    with backend:
        unasked = backend.sample(wants=budget.wants("saturation")).devices[0].saturation
        assert nv.count("nvmlDeviceGetPcieThroughput") == 0
        backend.sample(wants=LINKS)
        clock.advance(1.0)
        asked = backend.sample(wants=LINKS).devices[1].saturation
        asked_calls = nv.count("nvmlDeviceGetPcieThroughput"), nv.count("nvmlDeviceGetFieldValues")
        clock.advance(1.0)
        backend.sample(wants=LINKS)
    assert unasked.pcie_tx_mibps is None
    assert (asked.pcie_tx_mibps, asked.pcie_rx_mibps, asked.nvlink_tx_mibps) == (None, None, None)
    # GPU 0 each tick; GPU 1 refused once and is not asked again; the link count once each
    assert asked_calls == (2 * 2 + 2, 2)
    assert (nv.count("nvmlDeviceGetPcieThroughput"), nv.count("nvmlDeviceGetFieldValues")) == \
        (asked_calls[0] + 2, 2)


def test_gpm_samples_ping_pong_at_least_100ms_apart() -> None:
    backend, nv, clock = make([h100(0)])
    with backend:
        backend.sample()
        assert nv.count("nvmlGpmSampleAlloc") == 2
        gets = nv.count("nvmlGpmSampleGet")
        nv.gpus[0].gpm_metrics[nv.NVML_GPM_METRIC_SM_UTIL] = 12.0
        clock.advance(0.05)  # a faster tick: the older sample stays the baseline
        assert backend.sample().devices[0].saturation.sm_active_pct == 83.0
        assert nv.count("nvmlGpmSampleGet") == gets
        clock.advance(0.06)
        assert backend.sample().devices[0].saturation.sm_active_pct == 12.0
        assert nv.count("nvmlGpmSampleGet") == gets + 1
        assert nv.gpm_intervals[(0, None)] == pytest.approx(0.11, abs=1e-6)
        for _ in range(5):
            clock.advance(1.0)
            backend.sample()
    assert nv.count("nvmlGpmSampleAlloc") == 2  # allocated once, reused
    assert nv.count("nvmlGpmSampleFree") == 2  # freed on close
    assert nv.gpm_intervals[(0, None)] == pytest.approx(1.0, abs=1e-6)


def test_one_metric_error_or_nan_hides_only_itself() -> None:
    import pynvml as real

    gpu = h100(0)
    gpu.gpm_metrics[real.NVML_GPM_METRIC_DRAM_BW_UTIL] = ("err", NOT_SUPPORTED)
    gpu.gpm_metrics[real.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC] = math.nan
    del gpu.gpm_metrics[real.NVML_GPM_METRIC_FP16_UTIL]  # not reported at all
    backend, nv, clock = make([gpu])
    with backend:
        sat = backend.sample().devices[0].saturation
    assert sat.source == "gpm"
    assert sat.dram_bw_pct is None and sat.nvlink_rx_mibps is None and sat.fp16_pct is None
    assert sat.sm_active_pct == 83.0 and sat.nvlink_tx_mibps == 98765.0


@pytest.mark.parametrize("how", ["function", "version", "not_supported", "binding"])
def test_gpm_detection_failures_mean_unsupported(how) -> None:
    backend, nv, clock = make([h100(0)])
    if how == "function":
        nv.remove_function("nvmlGpmQueryDeviceSupport")
    elif how == "version":
        nv.fail("nvmlGpmQueryDeviceSupport", ARGUMENT_VERSION_MISMATCH)
    elif how == "not_supported":
        nv.fail("nvmlGpmQueryDeviceSupport", NOT_SUPPORTED)
    else:
        nv.hide_binding("nvmlGpmQueryDeviceSupport")
    with backend:
        dev = backend.sample().devices[0]
    assert dev.status == "ok" and dev.saturation.source is None
    assert dev.power_draw_w == pytest.approx(512.3)


def test_gpm_turning_unsupported_at_runtime_stops_asking() -> None:
    backend, nv, clock = make([h100(0)])
    with backend:
        backend.sample()
        nv.fail("nvmlGpmMetricsGet", NOT_SUPPORTED)
        clock.advance(1)
        assert backend.sample().devices[0].saturation.source is None
        calls = nv.count("nvmlGpmMetricsGet")
        clock.advance(1)
        backend.sample()
    assert nv.count("nvmlGpmMetricsGet") == calls


def test_gpm_with_mig_reads_each_gpu_instance() -> None:
    gpu = h100(0)
    gpu.mig = 1
    gpu.mig_instances = [FakeMigDevice(1, 66), FakeMigDevice(2, 33)]
    gpu.mig_gpm_metrics = {1: {2: 90.0, 10: 50.0, 20: 100.0}, 2: {2: 30.0, 10: 20.0, 20: 50.0}}
    backend, nv, clock = make([gpu])
    with backend:
        sat = backend.sample().devices[0].saturation
    assert sat.source == "gpm"
    assert sat.sm_active_pct == pytest.approx((90 * 66 + 30 * 33) / 99)  # weighted by SMs
    assert sat.dram_bw_pct == pytest.approx((50 * 66 + 20 * 33) / 99)
    assert sat.pcie_tx_mibps == 150.0  # rates add up
    assert sat.tensor_active_pct is None
    assert nv.count("nvmlGpmMigSampleGet") >= 4 and nv.count("nvmlGpmSampleGet") == 0


# ---------------------------------------------------------------------------- power limit

def test_set_power_limit_writes_milliwatts_and_is_read_back(h100_node) -> None:
    backend, nv, clock = h100_node
    backend.set_power_limit(2, 450)
    assert nv.gpus[2].power_limit_mw == 450_000
    assert backend.sample([2]).devices[0].power_limit_w == 450.0


@pytest.mark.parametrize(("code", "error"), [
    (NO_PERMISSION, NoPermission), (NOT_SUPPORTED, Unsupported),
    (FUNCTION_NOT_FOUND, Unsupported), (UNKNOWN, BackendError),
])
def test_set_power_limit_errors_are_typed(h100_node, code, error) -> None:
    backend, nv, clock = h100_node
    nv.fail("nvmlDeviceSetPowerManagementLimit", code)
    with pytest.raises(error) as info:
        backend.set_power_limit(1, 500)
    assert "GPU 1" in str(info.value)
    assert nv.gpus[1].power_limit_mw == 700_000


def test_set_power_limit_out_of_range_or_no_such_gpu(h100_node) -> None:
    backend, nv, clock = h100_node
    with pytest.raises(BackendError, match="outside its range 200-700 W"):
        backend.set_power_limit(0, 150)
    with pytest.raises(BackendError, match="no GPU 9"):
        backend.set_power_limit(9, 300)
    nv.lose(4)
    backend.sample()
    with pytest.raises(BackendError, match="lost"):
        backend.set_power_limit(4, 300)


# ---------------------------------------------------------------------------- init failures

@pytest.mark.parametrize(("kwargs", "code", "text"), [
    ({"library": False}, None, "NVML: libnvidia-ml.so.1 not found"),
    ({}, LIB_RM_VERSION_MISMATCH, "NVML: Driver/library version mismatch"),
    ({}, 9, "NVIDIA driver not loaded"),
    ({}, UNKNOWN, "NVML: Unknown Error"),
])
def test_init_failures_are_backend_unavailable(kwargs, code, text) -> None:
    backend, nv, clock = make(node(2), **kwargs)
    nv.init_error = code
    with pytest.raises(BackendUnavailable, match=text):
        backend.open()


def test_real_pynvml_without_a_library_is_backend_unavailable() -> None:
    import pynvml as real  # nvidia-ml-py itself; no libnvidia-ml.so.1 exists on this machine

    backend = NvmlBackend(BackendOptions(), nvml=real)
    with pytest.raises(BackendUnavailable, match=r"^NVML: libnvidia-ml.so.1 not found"):
        backend.open()


def test_cli_snapshot_through_the_fake(monkeypatch, capsys) -> None:
    from gputop.commands.main import main

    install(monkeypatch, FakeNvml(node(8, 4)))
    assert main(["snapshot", "--json", "--backend", "nvml"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["backend"] == "nvml" and len(doc["devices"]) == 8
    assert sum(len(d["processes"]) for d in doc["devices"]) == 32
    assert main(["snapshot", "--json"]) == 0  # auto picks NVML when it initialises
    assert json.loads(capsys.readouterr().out)["backend"] == "nvml"


def test_cli_auto_fails_on_nvml_with_a_version_mismatch(monkeypatch, capsys) -> None:
    """A script never gets the simulator in place of a broken driver (nvidia-smi's 255: other)."""
    from gputop.commands.main import main

    fake = install(monkeypatch, FakeNvml(node(2)))
    fake.init_error = LIB_RM_VERSION_MISMATCH
    monkeypatch.setenv("PATH", "/nonexistent")  # and no npu-smi to try next
    assert main(["snapshot", "--json"]) == 255
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "gputop: no GPU or NPU answered: NVML: Driver/library version mismatch" in err
    assert main(["snapshot", "--backend", "nvml"]) == 255
    assert "gputop: NVML: Driver/library version mismatch" in capsys.readouterr().err



def test_pcie_replays_and_remapped_rows_map_from_nvml_and_absent_stays_none() -> None:
    gpu = h100(0)
    gpu.pcie_replay = 3
    gpu.remapped_rows = (2, 1, 0, 1)
    old = h100(1)
    old.pcie_replay = old.remapped_rows = None  # NotSupported (remapping needs Ampere or newer)
    backend, nv, clock = make([gpu, old])
    with backend:
        dev, prev = backend.sample().devices
        clock.advance(1)
        backend.sample()
    assert (dev.pcie_replay_count, dev.remapped_rows_correctable,
            dev.remapped_rows_uncorrectable, dev.remapped_rows_failed) == (3, 2, 1, True)
    assert (prev.pcie_replay_count, prev.remapped_rows_correctable,
            prev.remapped_rows_uncorrectable, prev.remapped_rows_failed) == (None,) * 4
