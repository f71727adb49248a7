"""The pure readers of `rocm-smi … --json`, on the real captures of tests/fixtures/amd: six nodes
from ROCm 4.3 to 6.1, the same RX 6700 XT under three releases (its keys renamed), "N/A", and
the empty line before the JSON."""

from __future__ import annotations

import pytest

from gputop.backends.amd.rocm import mapping, output
from gputop.backends.amd.rocm.output import RocmSmiParseError
from tests.support.amd_smi import capture
from tests.support.rocm_smi import (
    ALL,
    MI50,
    MI100,
    RX6700XT_430,
    RX6700XT_571,
    RX6700XT_612,
    VEGA10,
)

# Each key a capture holds that the model has a place for -> the Device attribute it fills.
# Keys left out on purpose (docs/backends.md says why): the bare DPM level keys ("0", "1", …:
# several clocks' tables written over one another), voltages, firmware versions, the VIS_VRAM
# window, overdrive, performance level, memory vendor, topology, "GPU Memory Allocated (VRAM%)"
# (what used/total give), "Card SKU"/"Card model"/"Subsystem ID" (no subsystem vendor to pack).
KEY_FIELD = {
    "GPU ID": "pci_device_id", "Device ID": "pci_device_id",
    "Unique ID": "serial", "Serial Number": "serial",
    "VBIOS version": "vbios_version",
    "Temperature (Sensor edge) (C)": "temperature_c",
    "Temperature (Sensor junction) (C)": "temperature_hotspot_c",
    "Temperature (Sensor memory) (C)": "temperature_memory_c",
    "Temperature (Sensor HBM 0) (C)": "temperature_memory_c",
    "sclk clock speed:": "clock_sm_mhz", "mclk clock speed:": "clock_mem_mhz",
    "pcie clock level": "pcie_gen",
    "Fan speed (%)": "fan_pct",
    "Max Graphics Package Power (W)": "power_limit_w",
    "Average Graphics Package Power (W)": "power_draw_w",
    "GPU use (%)": "utilization_gpu_pct",
    "GPU memory use (%)": "utilization_memory_pct",
    "GPU Memory Read/Write Activity (%)": "utilization_memory_pct",
    "Memory Activity": "utilization_memory_pct",
    "PCIe Replay Count": "pcie_replay_count",
    "PCI Bus": "pci_bus_id",
    "VRAM Total Memory (B)": "memory_total_mib",
    "VRAM Total Used Memory (B)": "memory_used_mib",
    "GTT Total Memory (B)": "memory_gtt_total_mib",
    "GTT Total Used Memory (B)": "memory_gtt_used_mib",
    "Card series": "name", "Card Series": "name", "Device Name": "name",
}


def card_fields(found: output.Output, number: int) -> dict:
    ident = mapping.identity(found.cards[number])
    return {"name": ident.name, "pci_bus_id": ident.bus_id, **ident.attrs,
            **mapping.readings(found.cards[number])}


@pytest.mark.parametrize("name", ALL)
def test_every_value_a_capture_holds_reaches_the_model(name):
    found = output.load(capture(name), "rocm-smi")
    assert found.cards and found.banner == ()  # the empty line before two of them is skipped
    assert mapping.driver_version(found.system) is not None
    for number, card in found.cards.items():
        fields = card_fields(found, number)
        held = {KEY_FIELD[k] for k, v in card.items() if k in KEY_FIELD and v != "N/A"}
        assert held, name
        assert [f for f in sorted(held) if fields[f] is None] == [], (name, number)


def test_mi100_card0_as_its_json_says():
    found = output.load(capture(MI100), "rocm-smi")
    assert list(found.cards) == [0, 1, 2, 3, 4, 5]
    assert mapping.driver_version(found.system) == "6.2.4"
    assert card_fields(found, 0) == {
        "name": "Arcturus GL-XL [Instinct MI100]",
        "pci_bus_id": "0000:1e:00.0",  # "0000:1E:00.0", lower case as every backend's
        "pci_device_id": 0x738C1002,
        "vbios_version": "113-D3430400-037",
        "serial": "0",  # as printed: the board's FRU holds no serial
        "utilization_gpu_pct": 0.0, "utilization_memory_pct": 0.0,
        "power_draw_w": 39.0, "power_limit_w": 290.0,
        "temperature_c": 31.0, "temperature_hotspot_c": 34.0, "temperature_memory_c": 30.0,
        "clock_sm_mhz": 300.0, "clock_mem_mhz": 1200.0,  # "(300Mhz)", "(1200Mhz)"
        "pcie_gen": 3, "pcie_width": 16,  # "0 (8.0GT/s x16)"
        "pcie_replay_count": 0,
        "memory_total_mib": 32752.0,  # 34342961152 B
        "memory_used_mib": 6.46875,  # 6782976 B
        "memory_gtt_total_mib": 128792.25,  # 135048462336 B
        "memory_gtt_used_mib": 10.87109375,  # 11399168 B
        "fan_pct": None,  # a passive card: rocm-smi prints no fan key
    }
    assert [mapping.identity(c).bus_id for c in found.cards.values()] == [
        "0000:1e:00.0", "0000:22:00.0", "0000:3f:00.0", "0000:43:00.0", "0000:46:00.0",
        "0000:49:00.0"]
    assert [mapping.readings(c)["power_draw_w"] for c in found.cards.values()] \
        == [39.0, 37.0, 35.0, 39.0, 39.0, 40.0]


# The RX 6700 XT's figures that are the same in all three captures.
RX6700XT_SAME = {
    "pci_bus_id": "0000:07:00.0", "pci_device_id": 0x73DF1002,
    "vbios_version": "113-67XA6SSB1-D01",
    "serial": None,  # "Serial Number" and "Unique ID" are both "N/A"
    "utilization_gpu_pct": 0.0, "utilization_memory_pct": 0.0,
    "power_draw_w": 6.0, "power_limit_w": 211.0,
    "temperature_c": 45.0, "temperature_hotspot_c": 47.0, "temperature_memory_c": 46.0,
    "clock_mem_mhz": 96.0, "pcie_gen": 4, "pcie_width": 16, "pcie_replay_count": 0,
    "memory_total_mib": 12272.0,  # 12868124672 B
    "memory_gtt_total_mib": 16014.51171875,  # 16792432640 B
    "fan_pct": None,
}
NAVI22 = "Navi 22 [Radeon RX 6700/6700 XT / 6800M]"


@pytest.mark.parametrize(("name", "own", "sclk", "vram_used_b", "gtt_used_b"), [
    # 4.3.0 prints the vendor's id under "Card series": no name, so its PCI id names it
    (RX6700XT_430, "AMD GPU 1002:73DF", 500.0, 1622728704, 244150272),
    (RX6700XT_571, NAVI22, 500.0, 1564491776, 248328192),
    # 6.1.2: "Device ID", "Card Series", "GPU Memory Read/Write Activity (%)"
    (RX6700XT_612, NAVI22, 0.0, 1572745216, 242036736),
])
def test_the_same_rx6700xt_under_three_rocm_releases(name, own, sclk, vram_used_b, gtt_used_b):
    fields = card_fields(output.load(capture(name), "rocm-smi"), 0)
    assert {k: fields[k] for k in RX6700XT_SAME} == RX6700XT_SAME
    assert fields["name"] == own
    assert fields["clock_sm_mhz"] == sclk  # "(0Mhz)" in 6.1.2: printed, so 0, not N/A
    assert fields["memory_used_mib"] * 2**20 == vram_used_b
    assert fields["memory_gtt_used_mib"] * 2**20 == gtt_used_b


def test_na_stays_none_and_hbm_sensors_that_are_na_do_not_hide_the_memory_sensor():
    card = output.load(capture(RX6700XT_430), "rocm-smi").cards[0]
    assert card["Temperature (Sensor HBM 0) (C)"] == "N/A"
    assert mapping.readings(card)["temperature_memory_c"] == 46.0
    # 5.7.1's "Memory Activity" is "N/A": the busy % comes from "GPU memory use (%)"
    card = output.load(capture(RX6700XT_571), "rocm-smi").cards[0]
    assert (card["Memory Activity"], card["GPU memory use (%)"]) == ("N/A", "0")
    assert mapping.readings(card)["utilization_memory_pct"] == 0.0


def test_cards_without_a_product_name_are_named_by_their_pci_id():
    vega = output.load(capture(VEGA10), "rocm-smi").cards[0]
    assert "Card series" not in vega
    assert mapping.identity(vega).name == "AMD GPU 1002:6861"
    # the chip's unique id stands for the serial the board does not print (as in sysfs)
    assert mapping.identity(vega).attrs["serial"] == "0x2150e7d042a1124"
    mi50 = mapping.identity(output.load(capture(MI50), "rocm-smi").cards[0])
    assert (mi50.name, mi50.attrs["serial"]) == ("Radeon Instinct MI50 32GB", "692024000810")


def test_values_forms():
    assert output.clock_mhz("(1725Mhz)") == 1725.0
    assert output.clock_mhz("N/A") is None and output.clock_mhz(None) is None
    assert output.pcie_level("1 (16.0GT/s x16)") == output.PcieLevel(16.0, 16)
    assert output.pcie_level("8.0GT/s x16 *") is None  # a bare level key, not read
    assert output.text("N/A") is None and output.number(output.text("N/A")) is None


def test_an_output_cut_off_is_one_error():
    text = capture(MI100)
    with pytest.raises(RocmSmiParseError, match=r"cut off"):
        output.load(text[: len(text) // 2], "`rocm-smi … --json`")
    with pytest.raises(RocmSmiParseError, match=r"printed no JSON: ERROR: x"):
        output.load("ERROR: x\n", "`rocm-smi … --json`")
    with pytest.raises(RocmSmiParseError, match=r"expected an object of cards"):
        output.load("[]\n", "`rocm-smi … --json`")
