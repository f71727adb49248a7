"""The NVML backend on a MIG-enabled GPU, against the fake pynvml taught the driver's documented
MIG behaviour (and the layout of a real MIG H100 capture: fake_pynvml.mig_h100)."""

from __future__ import annotations

import pytest

from gputop.backends.base import BackendOptions
from gputop.backends.nvml import reads
from gputop.backends.nvml.backend import NvmlBackend
from gputop.backends.nvml.mig import profile_of
from tests.support.fake_pynvml import (
    FakeMigDevice,
    FakeNvml,
    FakeProcess,
    ManualClock,
    h100,
    mig_h100,
)

MIG_CALLS = ("nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMigDeviceHandleByIndex",
             "nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId",
             "nvmlDeviceGetAttributes")


def make(gpus):
    clock = ManualClock()
    nv = FakeNvml(gpus, clock=clock.wall)
    return NvmlBackend(BackendOptions(), nvml=nv, clock=clock), nv, clock


def test_profile_from_the_mig_device_name():
    assert profile_of("NVIDIA H100 80GB HBM3 MIG 1g.10gb") == "1g.10gb"
    assert profile_of("NVIDIA A100-SXM4-80GB MIG 1g.10gb+me") == "1g.10gb+me"
    assert profile_of("NVIDIA H100 80GB HBM3") is None
    assert profile_of(None) is None


def test_a_mig_gpu_shows_its_instances_as_nvidia_smi_does():
    backend, nv, clock = make([mig_h100(0), h100(1)])
    with backend:
        parent, whole = backend.sample().devices
    assert parent.mig_mode == "enabled" and whole.mig_mode == "disabled"
    # the driver reports no utilization on a MIG parent: None, never 0
    assert (parent.utilization_gpu_pct, parent.utilization_memory_pct,
            parent.utilization_encoder_pct, parent.utilization_decoder_pct) == (None,) * 4
    assert parent.remapped_rows_correctable is None and whole.remapped_rows_correctable == 0
    assert whole.utilization_gpu_pct == 97 and whole.mig_instances == ()
    # what the real capture's MIG devices table shows
    assert [(m.index, m.gpu_instance_id, m.compute_instance_id, m.profile, m.sm_count,
             m.memory_total_mib, m.memory_used_mib) for m in parent.mig_instances] == [
        (0, 2, 0, "3g.40gb", 60, 40448, 11091), (1, 3, 0, "2g.20gb", 32, 20096, 17),
        (2, 9, 0, "1g.10gb", 16, 9984, 9), (3, 10, 0, "1g.10gb", 16, 9984, 9)]
    assert all(m.uuid.startswith("MIG-") for m in parent.mig_instances)
    # processes under their instance; the parent's list is the union with the instance ids
    big = parent.mig_instances[0]
    assert sorted(p.pid for p in big.processes) == [21180, 21181, 21198]
    assert all(not m.processes for m in parent.mig_instances[1:])
    assert sorted(p.pid for p in parent.processes) == [21180, 21181, 21198]
    assert {(p.gpu_instance_id, p.compute_instance_id) for p in parent.processes} == {(2, 0)}
    assert all(p.sm_pct is None for p in parent.processes)  # no per-process SM% under MIG
    assert [p.gpu_memory_mib for p in sorted(big.processes, key=lambda p: p.pid)] == \
        [2296.0, 1272.0, 7484.0]
    # GPM per GPU instance, and the parent's combined by SMs
    assert big.saturation.source == "gpm" and big.saturation.sm_active_pct == 91.0
    assert parent.mig_instances[1].saturation.sm_active_pct == 0.0
    assert parent.saturation.sm_active_pct == pytest.approx(91.0 * 60 / 124)


def test_mig_reads_only_on_mig_gpus_and_the_layout_only_on_the_slow_period():
    backend, nv, clock = make([mig_h100(0), h100(1, [FakeProcess(9_000_001)])])
    with backend:
        backend.sample()
        probe = {fn: nv.count(fn) for fn in MIG_CALLS}
        base = dict(nv.calls)
        for _ in range(5):
            clock.advance(1)
            backend.sample()
        per_tick = {fn: (n - base.get(fn, 0)) / 5 for fn, n in nv.calls.items()
                    if n != base.get(fn, 0)}
        # a tick reads each MIG device's memory and processes, and no layout
        assert {fn: nv.count(fn) for fn in MIG_CALLS} == probe
        # 4 MIG devices + GPU 1
        assert per_tick["nvmlDeviceGetComputeRunningProcesses_v3"] == 4 + 1
        assert per_tick["nvmlDeviceGetGraphicsRunningProcesses_v3"] == 1  # GPU 1 only
        assert per_tick["nvmlDeviceGetMemoryInfo_v2"] == 2  # the two GPUs
        assert per_tick["nvmlDeviceGetMemoryInfo"] == 4  # the MIG devices
        # NOT_SUPPORTED is remembered: utilization is asked once of the MIG parent, then never
        assert per_tick["nvmlDeviceGetUtilizationRates"] == 1  # GPU 1 only
        assert per_tick["nvmlDeviceGetProcessUtilization"] == 1  # GPU 1 only
        clock.advance(reads.SLOW_REFRESH_S)
        backend.sample()
        assert nv.count("nvmlDeviceGetMaxMigDeviceCount") == probe[
            "nvmlDeviceGetMaxMigDeviceCount"] + 1  # the MIG GPU's layout, once per slow period
        assert nv.count("nvmlDeviceGetMigDeviceHandleByIndex") == probe[
            "nvmlDeviceGetMigDeviceHandleByIndex"] + 7  # its 7 slots (3 empty); none of GPU 1


def test_a_gpu_without_mig_makes_no_mig_call():
    backend, nv, clock = make([h100(0)])
    with backend:
        for _ in range(3):
            clock.advance(reads.SLOW_REFRESH_S)
            dev = backend.sample().devices[0]
    assert dev.mig_instances == ()
    assert all(nv.count(fn) == 0 for fn in MIG_CALLS)


def test_a_repartitioned_gpu_is_seen_on_the_slow_period():
    gpu = mig_h100(0)
    backend, nv, clock = make([gpu])
    with backend:
        assert len(backend.sample().devices[0].mig_instances) == 4
        gpu.mig_instances = [FakeMigDevice(7 + s, 16, "1g.10gb") for s in range(7)]
        gpu.mig_gpm_metrics = {7 + s: {2: 10.0 * s} for s in range(7)}
        gpu.processes = []
        clock.advance(1)
        backend.sample()  # may still show the old layout (or lose the torn-down devices)
        clock.advance(reads.SLOW_REFRESH_S)
        dev = backend.sample().devices[0]
    assert [m.gpu_instance_id for m in dev.mig_instances] == list(range(7, 14))
    assert {m.profile for m in dev.mig_instances} == {"1g.10gb"}
    # GPM streams follow the new GPU instances
    assert [m.saturation.sm_active_pct for m in dev.mig_instances] == \
        [10.0 * s for s in range(7)]


def test_mig_turned_off_leaves_no_instances_behind():
    gpu = mig_h100(0)
    backend, nv, clock = make([gpu])
    with backend:
        backend.sample()
        gpu.mig, gpu.mig_instances = 0, []
        for p in gpu.processes:
            p.gpu_instance_id = p.compute_instance_id = 0xFFFFFFFF
        clock.advance(reads.SLOW_REFRESH_S)
        dev = backend.sample().devices[0]
    assert dev.mig_mode == "disabled" and dev.mig_instances == ()
    assert sorted(p.pid for p in dev.processes) == [21180, 21181, 21198]
    assert all(p.gpu_instance_id is None for p in dev.processes)


def test_utilization_comes_back_when_mig_is_turned_off():
    gpu = mig_h100(0)
    backend, nv, clock = make([gpu])
    with backend:
        assert backend.sample().devices[0].utilization_gpu_pct is None
        gpu.mig, gpu.mig_instances = 0, []
        clock.advance(reads.SLOW_REFRESH_S)
        backend.sample()  # the MIG mode is read after this tick's utilization
        clock.advance(1)
        dev = backend.sample().devices[0]
    assert (dev.utilization_gpu_pct, dev.utilization_encoder_pct, dev.remapped_rows_correctable) \
        == (97, 0, 0)


def test_instances_torn_down_between_probes_are_not_an_error():
    gpu = mig_h100(0)
    backend, nv, clock = make([gpu])
    with backend:
        backend.sample()
        del gpu.mig_instances[2:]  # the two 1g.10gb instances destroyed (nvidia-smi mig -dci/-dgi)
        clock.advance(1)
        dev = backend.sample().devices[0]
        assert dev.status == "ok"
        # the dead handles read as nothing this tick; the next tick probes the layout again
        assert [m.memory_used_mib for m in dev.mig_instances] == [11091, 17, None, None]
        clock.advance(1)
        dev = backend.sample().devices[0]
    assert dev.status == "ok"
    assert [m.profile for m in dev.mig_instances] == ["3g.40gb", "2g.20gb"]


def test_the_dashboard_reads_the_instances_it_nests():
    # the dashboard samples with its own budget (tui/wants.py), not EVERYTHING: a read it forgets
    # to ask for leaves the MIG views empty on a real driver while the simulator still fills them
    from gputop.tui.text.wants import DASHBOARD

    backend, _, _ = make([mig_h100(0), h100(1)])
    with backend:
        parent, whole = backend.sample(wants=DASHBOARD).devices
    assert [m.profile for m in parent.mig_instances] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    assert whole.mig_instances == ()


def test_process_lists_a_mig_device_refused_come_back_when_mig_is_turned_off():
    # a MIG device answering NOT_SUPPORTED for its compute list must not leave the whole GPU
    # without process lists once MIG is off: the mode change asks again, as for utilization
    import pynvml

    gpu = mig_h100(0)
    backend, nv, clock = make([gpu])
    nv.fail("nvmlDeviceGetComputeRunningProcesses_v3", pynvml.NVML_ERROR_NOT_SUPPORTED, 0)
    with backend:
        assert backend.sample().devices[0].processes == ()
        nv.heal("nvmlDeviceGetComputeRunningProcesses_v3", 0)
        gpu.mig, gpu.mig_instances = 0, []
        for p in gpu.processes:
            p.gpu_instance_id = p.compute_instance_id = 0xFFFFFFFF
        clock.advance(reads.SLOW_REFRESH_S)
        backend.sample()  # the MIG mode is read after this tick's process lists
        clock.advance(1)
        dev = backend.sample().devices[0]
    assert sorted(p.pid for p in dev.processes) == [21180, 21181, 21198]
