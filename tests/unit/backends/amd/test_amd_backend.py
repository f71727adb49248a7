"""The AMD backend on every captured amdgpu tree: each value the capture holds is in the model,
every other one is None; the radeon card is passed over; processes come from the kernel's own
fdinfo text; each sample reads only what is wanted."""

from __future__ import annotations

import getpass
import os
from dataclasses import fields

import pytest

from gputop.backends import open_backend
from gputop.backends.amd.backend import PROCESS_NOTE, AmdBackend
from gputop.backends.base import BackendOptions, BackendUnavailable, NoDevice
from gputop.backends.drm import fdinfo
from gputop.core.budget import wants
from gputop.core.model import Device
from tests.support.amd import (
    AMDGPU_TREES,
    FDINFO_COMPUTE,
    FDINFO_GFX,
    RADEON_TREE,
    install_ids,
    mount,
    tree_file,
    tree_text,
)
from tests.support.drm import open_drm_file
from tests.support.fake_pynvml import FakeNvml, install, node

RX6900XT = "sysfs_RX6900XT-Navi21-RDNA2_amdgpu_lact-snapshot_gpu_metrics"
PHOENIX = "sysfs_Phoenix-APU-RDNA3_amdgpu_lact-snapshot_gpu_metrics_kfd"
R7_240 = "sysfs_R7-240-Oland-GCN1_amdgpu_lact-snapshot"
RX5500XT = "sysfs_RX5500XT-Navi14-RDNA1_amdgpu_lact-snapshot"  # its bus id is the fdinfo's
MIB = 1024 * 1024


def read(tmp_path, tree, **sample_kw) -> Device:
    backend = AmdBackend(BackendOptions(sysfs_root=str(mount(tmp_path, tree))))
    with backend:
        (dev,) = backend.sample(**sample_kw).devices
    return dev


def _hwmon_labelled(tree: str, kind: str, label: str) -> bool:
    """Whether the capture's hwmon has a ``<kind>N_label`` reading ``label``."""
    hwmon = tree_file(tree, "hwmon/hwmon*")
    labels = sorted(hwmon.glob(f"{kind}*_label")) if hwmon is not None else []
    return any(p.read_bytes().split(b"\0", 1)[0].decode().strip() == label for p in labels)


def _has(tree: str, *patterns: str) -> bool:
    """Whether the capture holds a non-empty value in any of the files ``patterns`` name."""
    return any(tree_text(tree, p) for p in patterns)


def _dpm_current(tree: str, table: str) -> bool:
    return any(line.rstrip().endswith("*") for line in (tree_text(tree, table) or "").splitlines())


# Which captured files give each value: a value is in the model exactly where its file holds one.
SOURCES = {
    "utilization_gpu_pct": lambda t: _has(t, "gpu_busy_percent"),
    "utilization_memory_pct": lambda t: _has(t, "mem_busy_percent"),
    "memory_used_mib": lambda t: _has(t, "mem_info_vram_used"),
    "memory_total_mib": lambda t: _has(t, "mem_info_vram_total"),
    "memory_gtt_used_mib": lambda t: _has(t, "mem_info_gtt_used"),
    "memory_gtt_total_mib": lambda t: _has(t, "mem_info_gtt_total"),
    "power_draw_w": lambda t: _has(t, "hwmon/hwmon*/power1_average", "hwmon/hwmon*/power1_input"),
    "power_limit_w": lambda t: _has(t, "hwmon/hwmon*/power1_cap"),
    "power_limit_default_w": lambda t: _has(t, "hwmon/hwmon*/power1_cap_default"),
    "power_limit_min_w": lambda t: _has(t, "hwmon/hwmon*/power1_cap_min"),
    "power_limit_max_w": lambda t: _has(t, "hwmon/hwmon*/power1_cap_max"),
    "temperature_c": lambda t: _hwmon_labelled(t, "temp", "edge")
    or _hwmon_labelled(t, "temp", "junction"),
    "temperature_hotspot_c": lambda t: _hwmon_labelled(t, "temp", "junction"),
    "temperature_memory_c": lambda t: _hwmon_labelled(t, "temp", "mem"),
    "fan_pct": lambda t: _has(t, "hwmon/hwmon*/pwm1") and _has(t, "hwmon/hwmon*/pwm1_max"),
    "clock_sm_mhz": lambda t: _hwmon_labelled(t, "freq", "sclk") or _dpm_current(t, "pp_dpm_sclk"),
    "clock_mem_mhz": lambda t: _hwmon_labelled(t, "freq", "mclk") or _dpm_current(t, "pp_dpm_mclk"),
    "clock_sm_max_mhz": lambda t: _has(t, "pp_dpm_sclk"),
    "clock_mem_max_mhz": lambda t: _has(t, "pp_dpm_mclk"),
    "pcie_gen": lambda t: _has(t, "current_link_speed"),
    "pcie_width": lambda t: _has(t, "current_link_width"),
    "pcie_gen_max": lambda t: _has(t, "max_link_speed"),
    "pcie_width_max": lambda t: _has(t, "max_link_width"),
    "pcie_replay_count": lambda t: _has(t, "pcie_replay_count"),
    "serial": lambda t: _has(t, "unique_id"),
    "vbios_version": lambda t: _has(t, "vbios_version"),
    "pci_device_id": lambda t: True,  # every uevent has PCI_ID
    "pci_sub_device_id": lambda t: True,
}
# What a backend with no tool to ask never fills (the NVIDIA, Ascend and simulator fields).
NEVER = {f.name for f in fields(Device)} - set(SOURCES) - {
    "index", "name", "vendor", "pci_bus_id", "status", "saturation", "processes",
    "mig_instances", "xid_events"}


@pytest.mark.parametrize("tree", AMDGPU_TREES)
def test_every_captured_value_is_read_and_nothing_else(tmp_path, tree):
    dev = read(tmp_path, tree)
    assert dev.vendor == "amd" and dev.status == "ok" and dev.name
    assert dev.pci_bus_id == tree_text(tree, "uevent").split("PCI_SLOT_NAME=")[1].split()[0]
    present = {attr for attr, has in SOURCES.items() if has(tree)}
    filled = {attr for attr in SOURCES if getattr(dev, attr) is not None}
    assert filled == present
    assert {attr for attr in NEVER if getattr(dev, attr) not in (None, False)} == set()


def test_the_rx6900xt_figures_checked_by_hand(tmp_path):
    install_ids(tmp_path)
    dev = read(tmp_path, RX6900XT)
    assert dev.name == "AMD Radeon RX 6900 XT"  # product_name is empty: 73BF rev C0 in amdgpu.ids
    assert dev.pci_bus_id == "0000:0c:00.0"
    assert dev.utilization_gpu_pct == 3 and dev.utilization_memory_pct == 0
    assert dev.memory_used_mib == 668274688 / MIB and dev.memory_total_mib == 17163091968 / MIB
    assert dev.memory_gtt_used_mib == 62369792 / MIB
    assert dev.power_draw_w == 36.0 and dev.power_limit_w == 289.0
    assert (dev.power_limit_min_w, dev.power_limit_max_w, dev.power_limit_default_w) \
        == (0.0, 332.0, 289.0)
    assert (dev.temperature_c, dev.temperature_hotspot_c, dev.temperature_memory_c) \
        == (56.0, 59.0, 54.0)
    assert (dev.clock_sm_mhz, dev.clock_mem_mhz) == (500.0, 1000.0)
    assert (dev.clock_sm_max_mhz, dev.clock_mem_max_mhz) == (2660.0, 1000.0)
    assert (dev.pcie_gen, dev.pcie_width, dev.pcie_gen_max, dev.pcie_width_max) == (4, 16, 4, 16)
    assert dev.fan_pct == 0.0 and dev.pcie_replay_count == 0
    assert dev.serial == "946d7e1ef9b172dd" and dev.vbios_version == "113-D4121EXT-CO1"
    assert dev.pci_device_id == 0x73BF1002 and dev.pci_sub_device_id == 0x440E1DA2


def test_the_phoenix_apu_has_its_gtt_and_no_fan_or_power_cap(tmp_path):
    dev = read(tmp_path, PHOENIX)
    assert dev.name == "AMD GPU 1002:15BF"  # no product_name, no amdgpu.ids: the PCI id
    assert dev.memory_total_mib == 4294967296 / MIB  # the VRAM carve-out
    assert dev.memory_used_mib == 1272893440 / MIB
    assert dev.memory_gtt_total_mib == 31433977856 / MIB
    assert dev.memory_gtt_used_mib == 211398656 / MIB
    assert dev.power_draw_w == 3.103  # power1_average, not power1_input's 3.142
    assert dev.temperature_c == 25.0 and dev.temperature_hotspot_c is None
    assert dev.clock_sm_mhz == 800.0  # hwmon freq1 (sclk)
    assert dev.clock_mem_mhz == 400.0  # no hwmon mclk: the starred level of pp_dpm_mclk
    assert dev.fan_pct is None and dev.power_limit_w is None and dev.serial is None


def test_a_gcn1_card_without_busy_or_power_files(tmp_path):
    install_ids(tmp_path)
    dev = read(tmp_path, R7_240)
    assert dev.name == "AMD Radeon R7 200 Series"  # 6617 rev 87
    assert dev.utilization_gpu_pct is None and dev.power_draw_w is None
    assert dev.temperature_c == 52.0 and dev.clock_sm_mhz == 400.0 and dev.clock_mem_mhz == 1150.0
    assert dev.clock_sm_max_mhz is None  # its pp_dpm_sclk is empty
    assert (dev.pcie_gen, dev.pcie_width, dev.pcie_gen_max, dev.pcie_width_max) == (2, 4, 3, 8)


def test_a_radeon_driver_card_is_passed_over_and_named(tmp_path):
    root = mount(tmp_path, RADEON_TREE)
    with pytest.raises(BackendUnavailable) as caught:
        AmdBackend(BackendOptions(sysfs_root=str(root))).open()
    assert str(caught.value) == (f"amdgpu: no card under {root}/sys/class/drm is driven by "
                                 "amdgpu (card0: radeon)")


def test_a_card_without_hwmon_has_no_power_or_temperature(tmp_path):
    # an accelerator without hwmon (nvtop asserted on one): the card's own files, copied
    card = tmp_path / "sys" / "class" / "drm" / "card0" / "device"
    card.mkdir(parents=True)
    for name in ("uevent", "gpu_busy_percent", "mem_info_vram_used", "mem_info_vram_total"):
        (card / name).write_bytes(tree_file(RX6900XT, name).read_bytes())
    backend = AmdBackend(BackendOptions(sysfs_root=str(tmp_path)))
    with backend:
        (dev,) = backend.sample().devices
    assert dev.utilization_gpu_pct == 3 and dev.memory_used_mib == 668274688 / MIB
    assert dev.power_draw_w is None and dev.temperature_c is None and dev.fan_pct is None


def test_a_card_that_disappears_is_lost(tmp_path):
    root = tmp_path / "root"
    drm = root / "sys" / "class" / "drm"
    drm.mkdir(parents=True)
    (drm / "card0").symlink_to(tree_file(RX6900XT, "uevent").parent.parent)
    backend = AmdBackend(BackendOptions(sysfs_root=str(root)))
    with backend:
        (drm / "card0").unlink()
        (dev,) = backend.sample().devices
    assert dev.status == "lost" and dev.name and dev.utilization_gpu_pct is None


def test_processes_from_the_kernels_fdinfo_text(tmp_path):
    root = mount(tmp_path, RX5500XT)  # 0000:04:00.0, the drm-pdev of both kernel examples
    me = os.getpid()
    open_drm_file(root, me, 7, FDINFO_GFX)
    open_drm_file(root, me, 8, FDINFO_GFX)  # the same DRM file twice (client 30): counted once
    open_drm_file(root, me, 9, FDINFO_COMPUTE)
    backend = AmdBackend(BackendOptions(sysfs_root=str(root)))
    with backend:
        (first,) = backend.sample().devices
        (second,) = backend.sample().devices
    (proc,) = first.processes
    assert proc.pid == me and proc.user == getpass.getuser()
    assert proc.gpu_memory_mib == (544428 + 44564) / 1024
    assert proc.command and proc.started is not None
    assert proc.sm_pct is None  # one reading: no share yet
    assert second.processes[0].sm_pct == 0.0  # the same counters a tick later: idle
    assert backend.notes() == ()


def test_processes_of_other_users_are_said_once(tmp_path, monkeypatch):
    root = mount(tmp_path, RX5500XT)
    open_drm_file(root, os.getpid(), 7, FDINFO_GFX)
    (root / "proc" / "1" / "fd").mkdir(parents=True)

    def drm_fds(fd_dir):
        if fd_dir.endswith("/1/fd"):  # root's process, read by a user without CAP_SYS_PTRACE
            raise PermissionError(13, "Permission denied", fd_dir)
        return real(fd_dir)

    real = fdinfo._drm_fds
    monkeypatch.setattr(fdinfo, "_drm_fds", drm_fds)
    backend = AmdBackend(BackendOptions(sysfs_root=str(root)))
    with backend:
        (dev,) = backend.sample().devices
    assert [p.pid for p in dev.processes] == [os.getpid()]
    assert backend.notes() == (PROCESS_NOTE,)


def test_each_sample_reads_only_what_is_wanted(tmp_path):
    root = mount(tmp_path, RX5500XT)
    open_drm_file(root, os.getpid(), 7, FDINFO_GFX)
    backend = AmdBackend(BackendOptions(sysfs_root=str(root)))
    with backend:
        (dev,) = backend.sample(wants=wants("utilization_gpu_pct")).devices
    assert dev.utilization_gpu_pct == 0
    assert dev.power_draw_w is None and dev.temperature_c is None and dev.clock_sm_mhz is None
    assert dev.processes == ()  # /proc was not scanned
    # the static facts come whatever is asked
    assert dev.power_limit_max_w == 156.0 and dev.name


def test_auto_detection_moves_on_when_no_card_is_there(tmp_path, monkeypatch):
    install(monkeypatch, FakeNvml(node(1))).init_error = 9  # NVML: driver not loaded
    monkeypatch.setenv("PATH", "/nonexistent")
    root = mount(tmp_path, None)
    with pytest.raises(NoDevice) as caught:
        open_backend("auto", BackendOptions(sysfs_root=str(root)))
    assert str(caught.value) == ("no GPU or NPU answered: NVML: NVIDIA driver not loaded; "
                                 f"amdgpu: no card under {root}/sys/class/drm is driven by amdgpu")
    assert caught.value.exit_code == 9


def test_auto_detection_opens_an_amd_card_and_calls_it_no_fallback(tmp_path, monkeypatch):
    install(monkeypatch, FakeNvml(node(1))).init_error = 9
    monkeypatch.setenv("PATH", "/nonexistent")
    backend = open_backend("auto", BackendOptions(sysfs_root=str(mount(tmp_path, RX6900XT))),
                           simulate_if_absent=True)
    try:
        assert backend.name == "amd"
        assert backend.fallback_reason is None  # the dashboard's "showing the simulator" warning
    finally:
        backend.close()


def test_power_input_where_the_card_prints_no_average(tmp_path):
    # a card that prints power1_input without power1_average: Strix Point's own two files
    strix = "sysfs_StrixPoint-APU-RDNA3.5_amdgpu_lact-snapshot_gpu_metrics_kfd"
    hwmon = tmp_path / "sys" / "class" / "drm" / "card1" / "device" / "hwmon" / "hwmon6"
    hwmon.mkdir(parents=True)
    (hwmon.parent.parent / "uevent").write_bytes(tree_file(strix, "uevent").read_bytes())
    (hwmon / "power1_input").write_bytes(
        tree_file(strix, "hwmon/hwmon6/power1_input").read_bytes())
    backend = AmdBackend(BackendOptions(sysfs_root=str(tmp_path)))
    with backend:
        (dev,) = backend.sample().devices
    assert dev.power_draw_w == 9.087


def test_snapshot_says_what_needs_more_once(tmp_path, monkeypatch, capsys):
    from gputop.commands.main import main

    root = mount(tmp_path, RX5500XT)
    (root / "proc" / "1" / "fd").mkdir(parents=True)

    def refused(fd_dir):
        raise PermissionError(13, "Permission denied", fd_dir)

    monkeypatch.setattr(fdinfo, "_drm_fds", refused)
    assert main(["--backend", "amd", "--sysfs-root", str(root), "snapshot", "--json"]) == 0
    err = capsys.readouterr().err
    assert err == f"gputop: note: {PROCESS_NOTE}\n"
