"""The pure parsers of the AMD backend, on values from the captured trees and the kernel's own
fdinfo examples (tests/fixtures/amd/SOURCES.md)."""

from __future__ import annotations

import pytest

from gputop.backends.amd import fdinfo, names, values
from gputop.backends.drm import fdinfo as drm_fdinfo
from gputop.backends.drm.files import Files
from gputop.backends.drm.rates import NS_PER_S, Rates, percent
from gputop.backends.drm.units import pcie_generation
from tests.support.amd import FDINFO_COMPUTE, FDINFO_GFX, IDS_FILE, tree_file, tree_text


@pytest.mark.parametrize(("tree", "table", "current", "top"), [
    # "0: 500Mhz *" / "1: 2660Mhz ": a starred level and a trailing space
    ("sysfs_RX6900XT-Navi21-RDNA2_amdgpu_lact-snapshot_gpu_metrics", "pp_dpm_sclk", 500, 2660),
    # RDNA3 prints the current clock as a middle level: "1: 31Mhz *" between 500 and 2219
    ("sysfs_RX7900XTX-Navi31-RDNA3_amdgpu_lact-snapshot", "pp_dpm_sclk", 31, 2219),
    # a card idling with its clock gated stars two levels, both 0
    ("sysfs_RX6600XT-Navi23-RDNA2_amdgpu_lact-snapshot", "pp_dpm_sclk", 0, 0),
    ("sysfs_RX580-Polaris-GCN4_amdgpu_lact-snapshot", "pp_dpm_mclk", 1750, 1750),
    # Phoenix APU: repeated levels
    ("sysfs_Phoenix-APU-RDNA3_amdgpu_lact-snapshot_gpu_metrics_kfd", "pp_dpm_mclk", 400, 800),
    # GCN1 on amdgpu: the file is there and empty
    ("sysfs_R7-240-Oland-GCN1_amdgpu_lact-snapshot", "pp_dpm_sclk", None, None),
])
def test_dpm_tables_give_the_starred_level_and_the_top_one(tree, table, current, top):
    dpm = values.parse_dpm(tree_text(tree, table))
    assert dpm == values.DpmTable(current, top)


def test_dpm_of_no_file_is_unknown():
    assert values.parse_dpm(None) == values.DpmTable(None, None)


@pytest.mark.parametrize(("tree", "gen"), [
    ("sysfs_RX6900XT-Navi21-RDNA2_amdgpu_lact-snapshot_gpu_metrics", 4),  # 16.0 GT/s PCIe
    ("sysfs_RX9070-Navi48-RDNA4_amdgpu_lact-snapshot_gpu_metrics", 5),  # 32.0 GT/s PCIe
    ("sysfs_R7-240-Oland-GCN1_amdgpu_lact-snapshot", 2),  # 5.0 GT/s PCIe
])
def test_link_speeds_are_pcie_generations(tree, gen):
    assert pcie_generation(tree_text(tree, "current_link_speed")) == gen


def test_an_unknown_link_speed_is_no_generation():
    assert pcie_generation("Unknown") is None
    assert pcie_generation(None) is None


def test_temperatures_by_label_and_the_hotspot_where_no_edge_sensor():
    both = values.temperatures({"edge": 56.0, "junction": 59.0, "mem": 54.0})
    assert both == values.Temperatures(56.0, 59.0, 54.0)
    # MI300 prints no edge sensor: the GPU's temperature is its hotspot's
    assert values.temperatures({"junction": 71.0, "mem": 60.0}).gpu_c == 71.0
    assert values.temperatures({}) == values.Temperatures(None, None, None)


def test_fan_percent_is_the_pwm_duty_and_unknown_without_a_range():
    assert values.fan_percent(117, 255) == 45.9
    assert values.fan_percent(117, None) is None
    assert values.fan_percent(None, 255) is None


def test_amdgpu_ids_name_a_card_by_device_and_revision():
    ids = names.parse_ids(IDS_FILE.read_text())
    assert ids[(0x73BF, 0xC0)] == "AMD Radeon RX 6900 XT"
    assert names.product_name(None, (0x1002, 0x73BF), 0xC0, ids) == "AMD Radeon RX 6900 XT"
    # a revision the table does not list, or none read: the PCI id, not a guess
    assert names.product_name(None, (0x1002, 0x73BF), 0x01, ids) == "AMD GPU 1002:73BF"
    assert names.product_name(None, (0x1002, 0x73BF), None, ids) == "AMD GPU 1002:73BF"
    assert names.product_name("AMD Instinct MI300X", (0x1002, 0x74A1), 0, ids) \
        == "AMD Instinct MI300X"


def test_the_kernels_fdinfo_example_is_one_amdgpu_client():
    client = fdinfo.parse_client(FDINFO_GFX.read_text())
    assert client == fdinfo.Client(pdev="0000:04:00.0", client_id="30",
                                   vram_bytes=544428 * 1024,
                                   engine_ns={"gfx": 39456116802})
    compute = fdinfo.parse_client(FDINFO_COMPUTE.read_text())
    assert compute is not None
    assert compute.vram_bytes == 44564 * 1024 and compute.engine_ns == {"compute": 46464671}


def test_memory_figures_in_every_unit_the_kernel_prints():
    assert drm_fdinfo.size_bytes("22 MiB") == 22 * 1024 * 1024
    assert drm_fdinfo.size_bytes("544428 KiB") == 544428 * 1024
    assert drm_fdinfo.size_bytes("0") == 0
    assert drm_fdinfo.size_bytes("12 parsecs") is None


def test_another_drivers_file_is_no_client():
    i915 = FDINFO_GFX.read_text().replace("amdgpu", "i915")
    assert fdinfo.parse_client(i915) is None
    assert fdinfo.parse_client("pos:\t0\nflags:\t02100002\n") is None


def test_engine_share_between_two_readings():
    shares = Rates()

    def share(busy_ns, now):
        return percent(shares.rate(("0000:04:00.0", 7), busy_ns, now * NS_PER_S))

    assert share(1_000_000_000, now=10.0) is None  # first: no share
    assert share(1_500_000_000, now=11.0) == 50.0
    # a counter that went back keeps the larger value: no negative share
    assert share(1_400_000_000, now=12.0) == 0.0
    assert share(3_000_000_000, now=13.0) == 100.0  # capped


def test_a_refused_file_is_remembered_and_a_driver_refusal_is_not(monkeypatch, tmp_path):
    from gputop.backends.drm import files as files_module

    path = str(tmp_path / "power1_average")

    def refuse(*_args, **_kw):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files_module, "open", refuse, raising=False)
    reader = Files()
    monkeypatch.setattr(files_module.os, "access", lambda *_a: True)
    assert reader.text(path) is None and reader.denied == set()  # amdgpu's EPERM: suspended
    monkeypatch.setattr(files_module.os, "access", lambda *_a: False)
    assert reader.integer(path) is None and reader.denied == {path}


def test_nul_padded_values_read_as_their_text():
    # RX6900XT's capture pads each value with NUL bytes to 4096
    path = tree_file("sysfs_RX6900XT-Navi21-RDNA2_amdgpu_lact-snapshot_gpu_metrics",
                     "mem_info_vram_used")
    assert path is not None and path.stat().st_size == 4096
    assert Files().integer(str(path)) == 668274688
