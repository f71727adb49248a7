"""A node with GPUs of two vendors: the mixed backend over fake children (numbering, split and
merge, a child failing, power-limit routing), and auto-detection combining NVML and an amdgpu
card where both answer, never the simulator, never amd-smi beside amdgpu's sysfs (#32 item 4)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

import pytest

from gputop.backends import open_backend
from gputop.backends.base import (
    CAP_POWER_LIMIT,
    CAP_PROCESSES,
    Backend,
    BackendError,
    BackendOptions,
    NoPermission,
)
from gputop.backends.mixed import MixedBackend, members
from gputop.core.budget import EVERYTHING, Wants
from gputop.core.model import Device, DeviceInfo, NodeInfo, Snapshot
from tests.support.amd import mount
from tests.support.fake_pynvml import FakeNvml, install, node

RX6900XT = "sysfs_RX6900XT-Navi21-RDNA2_amdgpu_lact-snapshot_gpu_metrics"


class Child(Backend):
    """``count`` devices of ``vendor``; records what it was asked."""

    def __init__(self, name: str, vendor: str, count: int, caps: frozenset[str] = frozenset(),
                 driver: str | None = None, cuda: str | None = None) -> None:
        self.name, self.vendor, self.capabilities = name, vendor, caps
        self._info = NodeInfo("node1", name, driver, cuda, tuple(
            DeviceInfo(index=i, name=f"{vendor} {i}", vendor=vendor, uuid=f"{vendor}-{i}")
            for i in range(count)))
        self.asked: list[tuple[list[int] | None, Wants | None]] = []
        self.limits: list[tuple[int, float]] = []
        self.fail: Exception | None = None
        self.closed = False
        self.extra_notes: tuple[str, ...] = ()

    def info(self) -> NodeInfo:
        return self._info

    def sample(self, devices: Sequence[int] | None = None, *,
               wants: Wants | None = EVERYTHING) -> Snapshot:
        self.asked.append((None if devices is None else list(devices), wants))
        if self.fail is not None:
            raise self.fail
        chosen = range(len(self._info.devices)) if devices is None else devices
        return Snapshot(host="node1", time=1.0, backend=self.name, devices=tuple(
            Device(index=i, name=f"{self.vendor} {i}", vendor=self.vendor,
                   utilization_gpu_pct=10.0 * i) for i in chosen))

    def notes(self) -> tuple[str, ...]:
        return self.extra_notes

    def set_power_limit(self, device: int, watts: float) -> None:
        self.limits.append((device, watts))

    def close(self) -> None:
        self.closed = True


def mixed(nv: int = 2, amd: int = 3) -> tuple[MixedBackend, Child, Child]:
    a = Child("nvml", "nvidia", nv, frozenset({CAP_POWER_LIMIT}), "580.95.05", "13.0")
    b = Child("amd", "amd", amd, frozenset({CAP_PROCESSES}), "6.8.0")
    m = MixedBackend([a, b])
    m.open()
    return m, a, b


def test_devices_are_numbered_on_each_keeping_its_vendor():
    m, _, _ = mixed()
    info = m.info()
    assert m.name == "nvml+amd" and info.backend == "nvml+amd"
    assert [(d.index, d.vendor, d.name) for d in info.devices] == [
        (0, "nvidia", "nvidia 0"), (1, "nvidia", "nvidia 1"),
        (2, "amd", "amd 0"), (3, "amd", "amd 1"), (4, "amd", "amd 2")]
    # the first child's versions: NVIDIA's, which nvidia-smi's faces read
    assert (info.driver_version, info.cuda_version) == ("580.95.05", "13.0")
    assert m.capabilities == {CAP_POWER_LIMIT, CAP_PROCESSES}
    assert members(m.name) == ("nvml", "amd") and members("nvml") == ("nvml",)


def test_sample_splits_the_asked_indices_and_merges_in_the_order_asked():
    m, a, b = mixed()
    snap = m.sample([3, 0, 4], wants={"utilization_gpu_pct": 1.0})
    assert a.asked == [([0], {"utilization_gpu_pct": 1.0})]
    assert b.asked == [([1, 2], {"utilization_gpu_pct": 1.0})]
    assert [(d.index, d.vendor, d.utilization_gpu_pct) for d in snap.devices] == [
        (3, "amd", 10.0), (0, "nvidia", 0.0), (4, "amd", 20.0)]
    assert snap.backend == "nvml+amd" and snap.driver_version == "580.95.05"


def test_a_child_not_asked_is_not_sampled():
    m, a, b = mixed()
    assert [d.index for d in m.sample([1]).devices] == [1]
    assert a.asked == [([1], EVERYTHING)] and b.asked == []


def test_sample_of_all_reads_every_child():
    m, _, _ = mixed()
    assert [d.index for d in m.sample().devices] == [0, 1, 2, 3, 4]


def test_a_child_that_fails_marks_its_devices_lost_not_the_node():
    m, a, b = mixed()
    b.fail = BackendError("amdgpu: card0 vanished")
    snap = m.sample()
    assert [d.status for d in snap.devices] == ["ok", "ok", "lost", "lost", "lost"]
    lost = snap.devices[2]
    assert (lost.index, lost.vendor, lost.uuid, lost.name) == (2, "amd", "amd-0", "amd 0")
    assert lost.status_reason == "the amd backend failed: amdgpu: card0 vanished"
    assert snap.devices[1].utilization_gpu_pct == 10.0  # NVIDIA's readings stand


def test_power_limits_go_to_the_owning_child_by_its_own_index():
    m, a, b = mixed()
    m.set_power_limit(1, 300.0)
    m.set_power_limit(4, 200.0)
    assert a.limits == [(1, 300.0)] and b.limits == [(2, 200.0)]
    with pytest.raises(BackendError, match="no GPU 5"):
        m.set_power_limit(5, 100.0)


def test_a_childs_refusal_reaches_the_caller():
    m, a, _ = mixed()

    def refuse(device: int, watts: float) -> None:
        raise NoPermission("changing a power limit needs root")

    a.set_power_limit = refuse  # type: ignore[method-assign]
    with pytest.raises(NoPermission):
        m.set_power_limit(0, 300.0)


def test_notes_are_every_childs_and_close_closes_all():
    m, a, b = mixed()
    a.extra_notes, b.extra_notes = ("nv note",), ("amd note",)
    assert m.notes() == ("nv note", "amd note")

    def broken() -> None:
        a.closed = True
        raise BackendError("NVML shutdown failed")

    a.close = broken  # type: ignore[method-assign]
    with pytest.raises(BackendError):
        m.close()
    assert a.closed and b.closed  # the second closed although the first failed


def test_the_advisor_knows_nvml_needs_root_on_a_mixed_node(monkeypatch):
    from gputop.advisor import safety

    monkeypatch.setattr(safety.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(safety, "_has_cap_sys_admin", lambda: False)
    m, _, _ = mixed()
    assert safety.missing_privilege(m) is not None
    assert safety.missing_privilege(Child("amd", "amd", 1)) is None


# ---------------------------------------------------------------- auto-detection

def test_auto_shows_nvidia_and_amd_together(tmp_path, monkeypatch):
    install(monkeypatch, FakeNvml(node(2)))
    monkeypatch.setenv("PATH", "/nonexistent")
    backend = open_backend("auto", BackendOptions(sysfs_root=str(mount(tmp_path, RX6900XT))))
    try:
        assert backend.name == "nvml+amd"
        devs = backend.sample().devices
        assert [(d.index, d.vendor) for d in devs] == [(0, "nvidia"), (1, "nvidia"), (2, "amd")]
        assert devs[2].name == "AMD GPU 1002:73BF"  # no amdgpu.ids installed under the root
    finally:
        backend.close()


def test_auto_with_one_vendor_is_that_backend(tmp_path, monkeypatch):
    install(monkeypatch, FakeNvml(node(2)))
    monkeypatch.setenv("PATH", "/nonexistent")
    backend = open_backend("auto", BackendOptions(sysfs_root=str(mount(tmp_path, None))),
                           simulate_if_absent=True)
    try:
        assert backend.name == "nvml"  # no simulator beside a real GPU, no mixed node of one
    finally:
        backend.close()


@pytest.mark.parametrize("tool", ["amd-smi", "rocm-smi"])
def test_auto_never_runs_an_amd_tool_beside_amdgpus_sysfs(tmp_path, monkeypatch, tool):
    """amd-smi and rocm-smi read the same GPUs: where sysfs answered, the tool is not run (a
    fake on PATH that would leave a mark if it were)."""
    install(monkeypatch, FakeNvml(node(1)))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / tool
    fake.write_text(f"#!/bin/sh\n{shutil.which('touch')} {tmp_path}/ran\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    root = mount(tmp_path / "root", RX6900XT)
    backend = open_backend("auto", BackendOptions(sysfs_root=str(root)))
    try:
        assert backend.name == "nvml+amd"
        assert not (tmp_path / "ran").exists()
    finally:
        backend.close()


def test_explicit_backend_is_unchanged(tmp_path, monkeypatch):
    install(monkeypatch, FakeNvml(node(2)))
    monkeypatch.setenv("PATH", "/nonexistent")
    backend = open_backend("nvml", BackendOptions(sysfs_root=str(mount(tmp_path, RX6900XT))))
    try:
        assert backend.name == "nvml" and len(backend.info().devices) == 2
    finally:
        backend.close()


def test_the_exporter_serves_a_mixed_node(tmp_path, monkeypatch):
    from gputop.exporter import collect, exposition, own

    install(monkeypatch, FakeNvml(node(2)))
    monkeypatch.setenv("PATH", "/nonexistent")
    backend = open_backend("auto", BackendOptions(sysfs_root=str(mount(tmp_path, RX6900XT))))
    try:
        text = exposition.render(collect.families(backend.sample(), own.Options(), "t")).decode()
    finally:
        backend.close()
    assert 'backend="nvml+amd"' in text

    def gpus(name: str) -> list[str]:
        return [ln.split('gpu="')[1].split('"')[0] for ln in text.splitlines()
                if ln.startswith(name + "{")]

    # DCGM's names for the NVIDIA GPUs only; every GPU under gputop's own family
    assert gpus("DCGM_FI_DEV_POWER_USAGE") == ["0", "1"]
    assert gpus("gputop_power_draw_watts") == ["0", "1", "2"]

