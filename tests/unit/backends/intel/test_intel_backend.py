"""The Intel backend on every captured i915 and xe tree: each value the capture holds is in the
model, every other one is None; the figures of the A380 and B580 checked by hand against the
files; power and utilization as rates between two readings; auto-detection."""

from __future__ import annotations

import os
import shutil
from dataclasses import fields

import pytest

from gputop.backends import open_backend
from gputop.backends.base import BackendOptions, BackendUnavailable, Clock
from gputop.backends.intel.backend import IntelBackend
from gputop.core.budget import wants
from gputop.core.model import Device
from gputop.core.units import MIB
from tests.support.drm import mount_tree
from tests.support.fake_pynvml import FakeNvml, install, node
from tests.support.intel import (
    A380,
    B580,
    B580_FAN,
    COMETLAKE,
    INTEL,
    TREES,
    fdinfo_xe,
    mount,
    tree_file,
    tree_int,
)


class HandClock(Clock):
    """A clock a test moves by hand."""

    sleeps = False

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return 1_700_000_000.0 + self.now


def read(tmp_path, tree, **sample_kw) -> Device:
    backend = IntelBackend(BackendOptions(sysfs_root=str(mount(tmp_path, tree))))
    with backend:
        (dev,) = backend.sample(**sample_kw).devices
    return dev


def _text(tree: str, pattern: str) -> str | None:
    path = tree_file(tree, pattern)
    return path.read_text().strip() if path is not None else None


def _labelled(tree: str, kind: str, label: str) -> bool:
    """Whether the capture's hwmon has a ``<kind>N_label`` reading ``label``."""
    hwmon = tree_file(tree, "device/hwmon/hwmon*")
    labels = sorted(hwmon.glob(f"{kind}*_label")) if hwmon is not None else []
    return any(p.read_text().strip() == label for p in labels)


def _nonzero(tree: str, *patterns: str) -> bool:
    return any(tree_int(tree, p) for p in patterns)


def _gt_file(tree: str, media: bool, name: str) -> bool:
    """Whether an xe GT of the kind asked for (its gtidle/name ending -mc or -rc) has ``name``."""
    for gt in sorted((INTEL / tree).glob("card*/device/tile*/gt*")):
        label = (gt / "gtidle" / "name").read_text().strip()
        if label.endswith("-mc") == media and (gt / name).exists():
            return True
    return False


def _speed(tree: str, name: str) -> bool:
    return "GT/s" in (_text(tree, f"device/{name}") or "")


# Which captured files give each value: a value is in the model exactly where its file holds one.
SOURCES = {
    "temperature_c": lambda t: _labelled(t, "temp", "pkg") or (
        tree_file(t, "device/hwmon/hwmon*/temp1_input") is not None
        and tree_file(t, "device/hwmon/hwmon*/temp1_label") is None),
    "temperature_memory_c": lambda t: _labelled(t, "temp", "vram"),
    "fan_pct": lambda t: _nonzero(t, "device/hwmon/hwmon*/fan1_max"),
    "power_limit_w": lambda t: _nonzero(t, *(f"device/hwmon/hwmon*/power1_{n}"
                                             for n in ("max", "cap", "crit"))),
    "power_limit_default_w": lambda t: _nonzero(t, "device/hwmon/hwmon*/power1_rated_max"),
    "energy_j": lambda t: _nonzero(t, "device/hwmon/hwmon*/energy1_input",
                                   "device/hwmon/hwmon*/energy2_input"),
    "clock_sm_mhz": lambda t: tree_file(t, "gt_act_freq_mhz") is not None
    or _gt_file(t, False, "freq0/act_freq"),
    "clock_video_mhz": lambda t: _gt_file(t, True, "freq0/act_freq"),
    "clock_sm_max_mhz": lambda t: tree_file(t, "gt_RP0_freq_mhz") is not None
    or _gt_file(t, False, "freq0/rp0_freq"),
    "pcie_gen": lambda t: _speed(t, "current_link_speed"),
    "pcie_width": lambda t: _nonzero(t, "device/current_link_width"),
    "pcie_gen_max": lambda t: _speed(t, "max_link_speed"),
    "pcie_width_max": lambda t: _nonzero(t, "device/max_link_width"),
    "pci_device_id": lambda t: True,  # every uevent has PCI_ID
    "pci_sub_device_id": lambda t: True,
}
# Rates of counters: None on a first reading, whatever the capture holds.
RATES = {"power_draw_w", "utilization_gpu_pct"}
# What neither driver prints in sysfs (memory: nvtop asks by ioctl), nor any backend without a
# vendor tool fills.
NEVER = {f.name for f in fields(Device)} - set(SOURCES) - RATES - {
    "index", "name", "vendor", "pci_bus_id", "status", "saturation", "processes",
    "mig_instances", "xid_events"}


@pytest.mark.parametrize("tree", TREES)
def test_every_captured_value_is_read_and_nothing_else(tmp_path, tree):
    dev = read(tmp_path, tree)
    assert dev.vendor == "intel" and dev.status == "ok"
    assert dev.pci_bus_id == _text(tree, "device/uevent").split("PCI_SLOT_NAME=")[1].split()[0]
    present = {attr for attr, has in SOURCES.items() if has(tree)}
    filled = {attr for attr in SOURCES if getattr(dev, attr) is not None}
    assert filled == present
    assert {attr for attr in RATES if getattr(dev, attr) is not None} == set()
    assert {attr for attr in NEVER if getattr(dev, attr) not in (None, False)} == set()


def test_the_a380_on_i915_checked_by_hand(tmp_path):
    dev = read(tmp_path, A380)
    assert dev.name == "Intel GPU 8086:56A5"  # i915 prints no product name
    assert dev.pci_bus_id == "0000:0b:00.0"
    assert dev.temperature_c == 55.0  # temp1_input 55000, unlabelled
    assert dev.power_limit_w == 55.0  # power1_max 55000000
    assert dev.power_limit_default_w is None  # power1_rated_max 0: not known, not 0 W
    assert dev.energy_j == 25637161804 / 1e6
    assert (dev.clock_sm_mhz, dev.clock_sm_max_mhz) == (600, 2450)  # gt_act, gt_RP0
    assert (dev.pcie_gen, dev.pcie_width) == (1, 1)  # 2.5 GT/s PCIe, x1
    assert dev.pcie_gen_max is None and dev.pcie_width_max is None  # not captured
    assert dev.fan_pct is None  # fan1_input 0 RPM and no fan1_max: no percentage
    assert dev.memory_total_mib is None and dev.memory_used_mib is None
    assert dev.pci_device_id == 0x56A58086 and dev.pci_sub_device_id == 0x60041849


def test_the_b580_on_xe_checked_by_hand(tmp_path):
    dev = read(tmp_path, B580)
    assert dev.name == "Intel GPU 8086:E20B" and dev.pci_bus_id == "0000:0b:00.0"
    assert (dev.temperature_c, dev.temperature_memory_c) == (46.0, 48.0)  # pkg, vram
    assert dev.power_limit_w == 380.0  # power1_crit alone under 6.16
    # energy1 "card" reads 0 (never counted): energy2 "pkg"
    assert dev.energy_j == 29523753173 / 1e6
    assert dev.clock_sm_mhz == 400 and dev.clock_video_mhz == 0  # gt0-rc, gt1-mc act_freq
    assert dev.clock_sm_max_mhz == 2850  # gt0's rp0_freq
    assert (dev.pcie_gen, dev.pcie_width, dev.pcie_gen_max, dev.pcie_width_max) == (1, 1, 1, 1)
    assert dev.fan_pct is None  # fan RPMs without a maximum
    assert dev.pci_device_id == 0xE20B8086 and dev.pci_sub_device_id == 0x11008086


def test_the_b580_on_a_fan_patched_kernel(tmp_path):
    dev = read(tmp_path, B580_FAN)
    assert dev.pci_bus_id == "0000:09:00.0"
    assert dev.fan_pct == round(100 * 1116 / 2160, 1)  # fan1_input over fan1_max
    assert dev.power_limit_w == 190.0  # power1_cap 190 W under power1_crit 380 W
    assert dev.energy_j == 11031745544 / 1e6  # the card's own counter, which counts here
    assert (dev.temperature_c, dev.temperature_memory_c) == (54.0, 56.0)


def test_an_integrated_gpu_without_hwmon_or_link(tmp_path):
    dev = read(tmp_path, COMETLAKE)
    assert dev.name == "Intel GPU 8086:9B41" and dev.pci_bus_id == "0000:00:02.0"
    assert (dev.clock_sm_mhz, dev.clock_sm_max_mhz) == (300, 1150)
    assert dev.temperature_c is None and dev.energy_j is None and dev.power_limit_w is None
    # "Unknown" speed and width 0: an iGPU has no PCIe link, not a link of width 0
    assert dev.pcie_gen is None and dev.pcie_width is None


def _copy(tmp_path, tree):
    """A writable copy of the captured tree, mounted, so that a test can move its counters."""
    copy = tmp_path / "tree"
    shutil.copytree(INTEL / tree, copy, symlinks=True)
    return mount_tree(tmp_path / "root", copy), copy


def _add(copy, pattern: str, amount: int) -> None:
    (path,) = copy.glob("card*/" + pattern)
    path.write_text(f"{int(path.read_text().split()[0]) + amount}\n")


def test_i915_power_and_utilization_between_two_readings(tmp_path):
    root, copy = _copy(tmp_path, A380)
    clock = HandClock()
    backend = IntelBackend(BackendOptions(sysfs_root=str(root)), clock=clock)
    with backend:
        (first,) = backend.sample().devices
        clock.now += 1.0
        _add(copy, "device/hwmon/hwmon1/energy1_input", 27_500_000)  # 27.5 J in 1 s
        _add(copy, "gt/gt0/rc6_residency_ms", 250)  # asleep 250 ms of 1000
        (second,) = backend.sample().devices
    assert first.power_draw_w is None and first.utilization_gpu_pct is None
    assert second.power_draw_w == 27.5
    assert second.utilization_gpu_pct == 75.0


def test_xe_utilization_is_the_render_gt_and_power_the_package(tmp_path):
    root, copy = _copy(tmp_path, B580)
    clock = HandClock()
    backend = IntelBackend(BackendOptions(sysfs_root=str(root)), clock=clock)
    with backend:
        backend.sample()
        clock.now += 2.0
        _add(copy, "device/hwmon/hwmon4/energy2_input", 30_000_000)  # pkg: 30 J in 2 s
        _add(copy, "device/tile0/gt0/gtidle/idle_residency_ms", 400)  # gt0-rc: 80 % busy
        _add(copy, "device/tile0/gt1/gtidle/idle_residency_ms", 2000)  # gt1-mc: idle
        (dev,) = backend.sample().devices
    assert dev.power_draw_w == 15.0
    assert dev.utilization_gpu_pct == 80.0  # the media GT's idle time is not counted


def test_a_client_of_another_card_is_not_this_cards(tmp_path):
    # the kernel's xe example names 0000:03:00.0; the B580 is at 0000:0b:00.0
    root = mount(tmp_path, B580)
    base = root / "proc" / str(os.getpid())
    (base / "fd").mkdir(parents=True)
    (base / "fdinfo").mkdir()
    os.symlink("/dev/dri/renderD128", base / "fd" / "7")
    (base / "fdinfo" / "7").write_text(fdinfo_xe())
    backend = IntelBackend(BackendOptions(sysfs_root=str(root)))
    with backend:
        (dev,) = backend.sample().devices
    assert dev.processes == () and backend.notes() == ()


def test_a_lone_card_takes_a_client_that_names_no_card(tmp_path):
    # the same text without its drm-pdev line (a kernel that prints none): the only card's
    root = mount(tmp_path, B580)
    base = root / "proc" / str(os.getpid())
    (base / "fd").mkdir(parents=True)
    (base / "fdinfo").mkdir()
    os.symlink("/dev/dri/renderD128", base / "fd" / "7")
    text = "".join(ln for ln in fdinfo_xe().splitlines(keepends=True)
                   if not ln.startswith("drm-pdev:"))
    (base / "fdinfo" / "7").write_text(text)
    backend = IntelBackend(BackendOptions(sysfs_root=str(root)))
    with backend:
        (dev,) = backend.sample().devices
    (proc,) = dev.processes
    assert proc.pid == os.getpid() and proc.gpu_memory_mib == 23992 * 1024 / MIB
    assert proc.sm_pct is None  # one reading: no share yet


def test_each_sample_reads_only_what_is_wanted(tmp_path):
    dev = read(tmp_path, B580_FAN, wants=wants("temperature_c"))
    assert dev.temperature_c == 54.0
    assert dev.fan_pct is None and dev.energy_j is None and dev.clock_sm_mhz is None
    assert dev.clock_sm_max_mhz == 2850  # the static facts come whatever is asked


def test_a_root_without_an_intel_card_is_unavailable(tmp_path):
    root = mount(tmp_path, None)
    with pytest.raises(BackendUnavailable) as caught:
        IntelBackend(BackendOptions(sysfs_root=str(root))).open()
    assert str(caught.value) == f"i915/xe: no card under {root}/sys/class/drm is driven by i915 or xe"


def test_auto_detection_opens_an_intel_card_after_amd(tmp_path, monkeypatch):
    install(monkeypatch, FakeNvml(node(1))).init_error = 9
    monkeypatch.setenv("PATH", "/nonexistent")
    backend = open_backend("auto", BackendOptions(sysfs_root=str(mount(tmp_path, A380))),
                           simulate_if_absent=True)
    try:
        assert backend.name == "intel"
        assert backend.fallback_reason is None
    finally:
        backend.close()
